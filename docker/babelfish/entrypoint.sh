#!/usr/bin/env bash
# Entrypoint of docker/babelfish/Dockerfile. On the first start it initializes a Babelfish
# cluster in $PGDATA, as in the start recipe of shared/babelfish/README.md but with
#   - md5 for every TCP client (TDS logins fail with scram-sha-256),
#   - babelfishpg_tsql.migration_mode = 'multi-db' (any number of T-SQL databases),
#   - the T-SQL login $BABELFISH_USER / $BABELFISH_PASSWORD (default bbf_admin / Bbf_Secret_1),
#     a sysadmin (it owns the babelfish_db database that holds every T-SQL database);
# then it runs the server in the foreground: TDS on 0.0.0.0:1433, PostgreSQL on 0.0.0.0:5432.
# Arguments are passed to postgres (e.g. -c log_statement=all).
set -euo pipefail

B=${BABELFISH_HOME:-/opt/babelfish}
PGDATA=${PGDATA:-/var/lib/babelfish/data}
BABELFISH_USER=${BABELFISH_USER:-bbf_admin}
BABELFISH_PASSWORD=${BABELFISH_PASSWORD:-Bbf_Secret_1}
MARKER=$PGDATA/babelfish.initialized

if [ "$(id -u)" = 0 ]; then
    echo "babelfish: the server refuses to run as root; run the image as its user 'babelfish'" >&2
    exit 1
fi
if ! [[ $BABELFISH_USER =~ ^[a-z_][a-z0-9_]*$ ]]; then
    echo "babelfish: BABELFISH_USER must be lower-case letters, digits and _ (got '$BABELFISH_USER')" >&2
    exit 1
fi

if [ ! -f "$MARKER" ]; then
    if [ -s "$PGDATA/PG_VERSION" ]; then
        echo "babelfish: $PGDATA holds a cluster whose set-up did not finish; remove it and start again" >&2
        exit 1
    fi
    echo "babelfish: initializing $PGDATA (login $BABELFISH_USER, migration mode multi-db)"
    mkdir -p "$PGDATA"
    chmod 700 "$PGDATA"
    "$B/bin/initdb" -D "$PGDATA" -E UTF8 --locale=C.UTF-8 -U postgres --auth-local=trust --auth-host=md5
    cat >>"$PGDATA/postgresql.conf" <<'EOF'

# -- Babelfish (docker/babelfish/entrypoint.sh) --
listen_addresses = '*'
port = 5432
unix_socket_directories = '/tmp'
shared_preload_libraries = 'babelfishpg_tds'
babelfishpg_tds.listen_addresses = '*'
babelfishpg_tds.port = 1433
EOF
    cat >>"$PGDATA/pg_hba.conf" <<'EOF'

# -- Babelfish: any TCP client, md5 (TDS logins fail with scram-sha-256) --
host    all             all             0.0.0.0/0               md5
host    all             all             ::/0                    md5
EOF

    # A private server for the set-up: PostgreSQL on the socket only, TDS on loopback only.
    "$B/bin/pg_ctl" -D "$PGDATA" -l "$PGDATA/setup.log" -w \
        -o "-c listen_addresses='' -c babelfishpg_tds.listen_addresses=127.0.0.1" start
    "$B/bin/psql" -h /tmp -p 5432 -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
        -v login="$BABELFISH_USER" -v password="$BABELFISH_PASSWORD" <<'SQL'
CREATE USER :"login" WITH SUPERUSER CREATEDB CREATEROLE PASSWORD :'password' INHERIT;
CREATE DATABASE babelfish_db OWNER :"login";
\c babelfish_db
CREATE EXTENSION IF NOT EXISTS babelfishpg_tds CASCADE;
GRANT ALL ON SCHEMA sys TO :"login";
ALTER SYSTEM SET babelfishpg_tsql.database_name = 'babelfish_db';
ALTER SYSTEM SET babelfishpg_tsql.migration_mode = 'multi-db';
SELECT pg_reload_conf();
\c babelfish_db
CALL sys.initialize_babelfish(:'login');
SQL
    "$B/bin/pg_ctl" -D "$PGDATA" -m fast -w stop
    touch "$MARKER"
    echo "babelfish: ready to start"
fi

exec "$B/bin/postgres" -D "$PGDATA" "$@"
