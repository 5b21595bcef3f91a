#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine: apt packages applier needs, a virtual
# environment with the project and its test extras, and the project's own odbcinst.ini.
# Safe to run again: it installs only what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

# -- system packages -------------------------------------------------------------------
# unixodbc + odbc-postgresql: the ODBC manager and psqlODBC; tdsodbc: FreeTDS for SQL Server;
# postgresql: server binaries for the embedded subscriber; a Java runtime for Spark;
# chromium: headless, it renders the HTML report in tests/integration/test_html_chromium.py.
# libossp-uuid16 and zstd: the embedded Babelfish (applier.targets.babelfish) needs the first at
# run time (its uuid-ossp) and the second to unpack its .tar.zst build. wal2json: below, once
# the server's major version is known.
pkgs=(unixodbc odbc-postgresql tdsodbc postgresql chromium libossp-uuid16 zstd)
command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
updated=""
apt_install() {
    echo "setup: installing $*"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || { echo "setup: need root or sudo to install $*" >&2; exit 1; }
        SUDO=sudo
    fi
    [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
    # RUNLEVEL=1 keeps Debian's postgresql package from starting a system cluster we don't use.
    DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if ((${#missing[@]})); then
    apt_install "${missing[@]}"
fi
# wal2json, the logical decoding plugin of the test publisher (tests/support/publisher.py), is
# built per server major version: postgresql-<major>-wal2json for every server installed (the
# embedded cluster takes pg_config's or the newest; Debian's postgresql pulls its supported one).
wal2json=()
for bin in /usr/lib/postgresql/*/bin/postgres; do
    [ -x "$bin" ] || continue
    major=$(basename "$(dirname "$(dirname "$bin")")")
    [ -f "/usr/lib/postgresql/$major/lib/wal2json.so" ] || wal2json+=("postgresql-$major-wal2json")
done
if ((${#wal2json[@]})); then
    apt_install "${wal2json[@]}"
fi

# -- virtual environment -----------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.applier-installed"
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing applier and its test extras into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q -e ".[test,dev]"
    echo "$want" > "$stamp"
fi

# -- ODBC driver registry owned by the project ---------------------------------------------
# Debian's /etc/odbcinst.ini sets CommLog=1 (a log file per process under /tmp); ours does not.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
odbc_dir="$VENV/etc/odbc"
mkdir -p "$odbc_dir"
sed "s#/usr/lib/x86_64-linux-gnu/#/usr/lib/$arch/#g" ci/odbcinst.ini > "$odbc_dir/odbcinst.ini.new"
mv "$odbc_dir/odbcinst.ini.new" "$odbc_dir/odbcinst.ini"
# -- Spark's class-data archive (applier.sparkenv): recorded once, Spark starts ~2.5 s faster --
echo "setup: $("$VENV/bin/python" -m applier.archive 2>/dev/null | tail -1)"
echo "setup: ready ($VENV, ODBCSYSINI=$odbc_dir)"
