#!/usr/bin/env bash
# Build Babelfish for PostgreSQL 4.3.0 (PostgreSQL 16.4) from source: the same engine as the
# prebuilt shared/babelfish/babelfish-4.3.0-pg16.4-bookworm-amd64.tar.zst (same commits, same
# configure flags, same RAISERROR/THROW patch, same layout), for users who have no copy of it.
#
#   ci/babelfish.sh [OUT]          # OUT defaults to $OUT, else ./out/babelfish
#
# Produces in OUT:
#   babelfish-4.3.0-pg16.4/                           the tree (bin, lib, share, include)
#   babelfish-4.3.0-pg16.4-bookworm-amd64.tar.zst     the same tree, tarred
# and applier uses either of them with
#   APPLIER_BABELFISH=$OUT/babelfish-4.3.0-pg16.4-bookworm-amd64.tar.zst   (or .../babelfish-4.3.0-pg16.4)
#
# Time: about 13 minutes on two cores (ANTLR C++ runtime ~3.5 min, PostgreSQL ~5 min,
# babelfishpg_tsql ~3.5 min), plus the downloads. Needs a few GB of disk in $WORK and 4 GB of memory.
#
# Network: the Debian archive (apt-get, only for build packages that are missing) and GitHub
# (https://github.com/.../archive/<commit>.tar.gz, redirected to codeload.github.com) for three
# source tarballs pinned by commit: the engine (~28 MB), the extensions (~14 MB, which also
# carry the ANTLR 4.9.3 tool jar) and antlr4 (~5 MB, for the C++ runtime). Nothing else: utfcpp
# comes from Debian's libutfcpp-dev, so ANTLR's CMake does not git-clone it. (The ANTLR tool jar
# is the extensions' own copy, as in Babelfish's build instructions, checked by its SHA-256.)
#
# Root or sudo is needed only for apt-get (SKIP_APT=1 skips that step when the packages are
# there). Meant for Debian 12 bookworm on x86-64 (the tarball's name says so); elsewhere it warns.
#
# Environment:
#   OUT       output folder (the first argument wins), default ./out/babelfish
#   WORK      work folder: downloads (kept and reused), sources, build logs; default ./out/babelfish-build
#   JOBS      parallel make jobs, default $(nproc)
#   SKIP_APT  1: do not install build packages
#   VERBOSE   1: show build output too (it always goes to $WORK/logs/)
#   ZSTD_LEVEL  compression level of the tarball, default 19
#
# Re-running is safe: downloads already in $WORK/dl are checked (commit id in the tarball) and
# reused; sources are unpacked afresh and the tree is rebuilt from scratch each time.
set -euo pipefail

# -- what is built ----------------------------------------------------------------------------
BBF_VERSION=4.3.0
PG_VERSION=16.4
NAME=babelfish-$BBF_VERSION-pg$PG_VERSION
TARBALL=$NAME-bookworm-amd64.tar.zst

ENGINE_REPO=babelfish-for-postgresql/postgresql_modified_for_babelfish
ENGINE_BRANCH=BABEL_4_3_STABLE__PG_16_4
ENGINE_COMMIT=d965d72bbbed54c6f1bf691e35b3d8a780eb8595
EXT_REPO=babelfish-for-postgresql/babelfish_extensions
EXT_BRANCH=BABEL_4_3_STABLE
EXT_COMMIT=4fc9c477a874770b8632ec6b475da5e1715b16eb
ANTLR_REPO=antlr/antlr4
ANTLR_VERSION=4.9.3
ANTLR_COMMIT=e4c1a74c66bd5290364ea2b36c97cd724b247357
# the tool jar shipped in the extensions at EXT_COMMIT (contrib/babelfishpg_tsql/antlr/thirdparty/antlr/)
ANTLR_JAR_SHA256=afcd40946d3de4d81e28d7c88d467289e0587285d27adb172aecc5494a17df36

CONFIGURE_FLAGS=(--with-libxml --with-uuid=ossp --with-icu --with-openssl CFLAGS=-O2)
# No -Werror (GCC 12 maybe-uninitialized warning in procedures.c); -fcommon (GCC 10+ rejects
# babelfishpg_tsql's duplicate tentative definitions). Passed on make's command line, so it
# replaces the Makefile's own "PG_CFLAGS += -g -Werror ...".
TSQL_PG_CFLAGS="-g -Wfloat-conversion -fstack-protector-strong -fcommon"

APT_PACKAGES=(
    build-essential flex bison perl patch pkg-config cmake
    libxml2-dev libicu-dev libssl-dev libossp-uuid-dev libreadline-dev zlib1g-dev
    uuid-dev libutfcpp-dev          # ANTLR C++ runtime: libuuid, and utfcpp instead of a git clone
    curl ca-certificates zstd patchelf
)
JAVA_PACKAGE=openjdk-17-jre-headless  # the ANTLR tool (a jar) generates the T-SQL parser

# -- where ------------------------------------------------------------------------------------
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    exit 0
fi
OUT=${1:-${OUT:-./out/babelfish}}
WORK=${WORK:-./out/babelfish-build}
JOBS=${JOBS:-$(nproc)}
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)
DEST=$OUT/$NAME                  # the install prefix: the tree that ends up in the tarball
DL=$WORK/dl                      # downloads, kept between runs
SRC=$WORK/src                    # unpacked sources, renewed each run
LOGS=$WORK/logs
ENGINE_SRC=$SRC/engine
EXT_SRC=$SRC/babelfish_extensions
ANTLR_SRC=$SRC/antlr4
PATCH_FILE=$WORK/raiserror-13000.patch

# PostgreSQL installs into lib/postgresql and share/postgresql only when the prefix does not
# contain "postgres" or "pgsql"; the layout must match the prebuilt tree's.
case $DEST in
*postgres* | *pgsql*)
    echo "babelfish.sh: the output path $DEST contains 'postgres' or 'pgsql'; PostgreSQL would" >&2
    echo "then install without its lib/postgresql and share/postgresql subfolders. Choose another OUT." >&2
    exit 2
    ;;
esac

# -- steps, timed and logged -----------------------------------------------------------------
T0=$SECONDS
STEP_NO=0
STEP_NAME=""
STEP_LOG=""

mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

on_exit() {
    local rc=$?
    if ((rc != 0)) && [[ -n $STEP_NAME ]]; then
        if [[ -n $STEP_LOG && -f $STEP_LOG && ${VERBOSE:-0} != 1 ]]; then
            echo "---- last lines of $STEP_LOG ----" >&2
            tail -n 60 "$STEP_LOG" >&2 || true
            echo "----" >&2
        fi
        echo "babelfish.sh: FAILED in step '$STEP_NAME' (exit $rc) after $(mmss $((SECONDS - T0)))${STEP_LOG:+; full log: $STEP_LOG}" >&2
    fi
}
trap on_exit EXIT

# step "title" function [args...]: runs the function in a subshell (so cd stays local), its
# output into $LOGS/NN-title.log, and prints the step's wall time.
step() {
    local title=$1
    shift
    STEP_NO=$((STEP_NO + 1))
    STEP_NAME=$title
    STEP_LOG=$LOGS/$(printf '%02d' "$STEP_NO")-${title//[^A-Za-z0-9._-]/_}.log
    local t=$SECONDS
    printf '[%s] %s ...\n' "$(mmss $((t - T0)))" "$title"
    if [[ ${VERBOSE:-0} == 1 ]]; then
        ("$@") 2>&1 | tee "$STEP_LOG"
    else
        ("$@") >"$STEP_LOG" 2>&1
    fi
    printf '[%s] %s: done in %s\n' "$(mmss $((SECONDS - T0)))" "$title" "$(mmss $((SECONDS - t)))"
    STEP_NAME=""
    STEP_LOG=""
}

# -- the patch (byte for byte share/doc/babelfish/raiserror-13000.patch of the prebuilt) -----
# RAISERROR / THROW accept numbers from 13000 (stock: 50000), and user errors under 50000 reach
# the client with their own number: SQL Server replication raises 20598 (sp_MSreplraiserror).
write_patch() {
    cat >"$1" <<'RAISERROR_13000_PATCH'
diff --git a/contrib/babelfishpg_tsql/src/iterative_exec.c b/contrib/babelfishpg_tsql/src/iterative_exec.c
index 2f45698a3..009b907df 100644
--- a/contrib/babelfishpg_tsql/src/iterative_exec.c
+++ b/contrib/babelfishpg_tsql/src/iterative_exec.c
@@ -2029,7 +2029,7 @@ read_raiserror_params(PLtsql_execstate *estate, List *params, int paramno,
 		*msg_id = DatumGetInt32(exec_cast_value(estate, val, &isnull,
 												restype, restypmod,
 												INT4OID, -1));
-		if (*msg_id < 50000)
+		if (*msg_id < 13000)
 			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
 							errmsg("msg_id argument of RAISERROR should be no less than 50000")));
 		*msg = psprintf("No. %d in sys.messages", *msg_id);
@@ -2115,7 +2115,7 @@ read_throw_params(PLtsql_execstate *estate, List *params,
 	if (isnull)
 		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
 						errmsg("err_no argument of THROW is null")));
-	if (*err_no < 50000)
+	if (*err_no < 13000)
 		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
 						errmsg("err_no argument of THROW should be no less than 50000")));
 
diff --git a/contrib/babelfishpg_tsql/src/pltsql_utils.c b/contrib/babelfishpg_tsql/src/pltsql_utils.c
index 8d27110bc..25d558d8c 100644
--- a/contrib/babelfishpg_tsql/src/pltsql_utils.c
+++ b/contrib/babelfishpg_tsql/src/pltsql_utils.c
@@ -859,7 +859,7 @@ bool
 pltsql_get_errdata(int *tsql_error_code, int *tsql_error_severity, int *tsql_error_state)
 {
 	if (exec_state_call_stack == NULL ||
-		exec_state_call_stack->error_data.error_number < 50000)
+		exec_state_call_stack->error_data.error_number < 13000)
 		return false;
 
 	if (tsql_error_code)
RAISERROR_13000_PATCH
}

# -- step functions ----------------------------------------------------------------------------
install_packages() {
    local missing=() p
    for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    command -v java >/dev/null 2>&1 || missing+=("$JAVA_PACKAGE")
    if ((${#missing[@]} == 0)); then
        echo "all build packages present"
        return
    fi
    echo "installing: ${missing[*]}"
    local sudo=()
    if [[ $(id -u) != 0 ]]; then
        command -v sudo >/dev/null || { echo "need root or sudo to install ${missing[*]}" >&2; exit 1; }
        sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# A GitHub archive tarball carries its commit id in a pax header ("52 comment=<sha>").
tarball_ok() { # file commit
    [[ -s $1 ]] && gzip -t "$1" 2>/dev/null || return 1
    local head
    head=$(gzip -dc "$1" 2>/dev/null | head -c 1024 | tr -d '\000' || true)
    [[ $head == *"comment=$2"* ]]
}

download() { # repo commit file
    local repo=$1 commit=$2 file=$3
    if tarball_ok "$file" "$commit"; then
        echo "present: $file"
        return
    fi
    echo "downloading $repo @ $commit"
    rm -f "$file" "$file.part"
    curl -fsSL --retry 3 --retry-delay 5 --connect-timeout 30 -o "$file.part" \
        "https://github.com/$repo/archive/$commit.tar.gz"
    tarball_ok "$file.part" "$commit" || { echo "$file.part is not $repo at $commit" >&2; exit 1; }
    mv "$file.part" "$file"
}

download_sources() {
    mkdir -p "$DL"
    download "$ENGINE_REPO" "$ENGINE_COMMIT" "$DL/postgresql_modified_for_babelfish-$ENGINE_COMMIT.tar.gz"
    download "$EXT_REPO" "$EXT_COMMIT" "$DL/babelfish_extensions-$EXT_COMMIT.tar.gz"
    download "$ANTLR_REPO" "$ANTLR_COMMIT" "$DL/antlr4-$ANTLR_COMMIT.tar.gz"
}

unpack() { # tarball dir
    rm -rf "$2"
    mkdir -p "$2"
    tar -xzf "$1" -C "$2" --strip-components=1
}

unpack_and_patch() {
    rm -rf "$SRC"
    unpack "$DL/postgresql_modified_for_babelfish-$ENGINE_COMMIT.tar.gz" "$ENGINE_SRC"
    unpack "$DL/babelfish_extensions-$EXT_COMMIT.tar.gz" "$EXT_SRC"
    unpack "$DL/antlr4-$ANTLR_COMMIT.tar.gz" "$ANTLR_SRC"

    grep -q "PACKAGE_VERSION='$PG_VERSION'" "$ENGINE_SRC/configure" ||
        { echo "the engine source is not PostgreSQL $PG_VERSION" >&2; exit 1; }
    local v
    # shellcheck source=/dev/null
    v=$(. "$EXT_SRC/contrib/babelfishpg_tsql/Version.config" &&
        echo "$PGTSQL_MAJOR_VERSION.$PGTSQL_MINOR_VERSION.$PGTSQL_MICRO_VERSION")
    [[ $v == "$BBF_VERSION" ]] || { echo "the extensions source is Babelfish $v, not $BBF_VERSION" >&2; exit 1; }
    [[ $(cat "$ANTLR_SRC/runtime/Cpp/VERSION") == "$ANTLR_VERSION" ]] ||
        { echo "the antlr4 source is not $ANTLR_VERSION" >&2; exit 1; }

    local jar=$EXT_SRC/contrib/babelfishpg_tsql/antlr/thirdparty/antlr/antlr-$ANTLR_VERSION-complete.jar
    echo "$ANTLR_JAR_SHA256  $jar" | sha256sum -c -

    write_patch "$PATCH_FILE"
    (cd "$EXT_SRC" && patch -p1 --batch --forward --fuzz=0 -i "$PATCH_FILE")
    local n
    n=$(grep -c '< 13000' "$EXT_SRC/contrib/babelfishpg_tsql/src/iterative_exec.c" \
        "$EXT_SRC/contrib/babelfishpg_tsql/src/pltsql_utils.c" | awk -F: '{s += $2} END {print s}')
    [[ $n == 3 ]] || { echo "patch check: expected 3 changed comparisons, found $n" >&2; exit 1; }
}

build_antlr_runtime() {
    local b=$ANTLR_SRC/runtime/Cpp/build
    mkdir -p "$b"
    cd "$b"
    cmake .. -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$DEST" -DWITH_DEMO=False
    make -j"$JOBS"
    make install
    test -f "$DEST/lib/libantlr4-runtime.so.$ANTLR_VERSION"
}

configure_engine() {
    cd "$ENGINE_SRC"
    ./configure --prefix="$DEST" "${CONFIGURE_FLAGS[@]}"
}

make_engine() {
    cd "$ENGINE_SRC"
    make -j"$JOBS"
}

install_engine() {
    cd "$ENGINE_SRC"
    make install
    make -C contrib -j"$JOBS"
    make -C contrib install
    test -f "$DEST/lib/postgresql/uuid-ossp.so"
}

# The extension Makefiles need PG_CONFIG (the installed engine) and PG_SRC (its built source
# tree); babelfishpg_tsql also needs $(cmake) and the ANTLR runtime, whose place it hard-codes
# as /usr/local: overridden here to the runtime installed in $DEST.
ext_env() {
    export PG_CONFIG=$DEST/bin/pg_config
    export PG_SRC=$ENGINE_SRC
    cmake=$(command -v cmake)
    export cmake
    ANTLR4_JAVA_BIN=$(command -v java)
    export ANTLR4_JAVA_BIN
}

build_extension() { # name
    ext_env
    cd "$EXT_SRC/contrib/$1"
    make -j"$JOBS" PG_CONFIG="$PG_CONFIG"
    make install PG_CONFIG="$PG_CONFIG"
}

# The T-SQL grammar (ANTLR tool -> C++ -> libantlr_tsql.a): antlr/CMakeLists.txt hard-codes
# /usr/local/include/antlr4-runtime, so the include folder comes in through CXXFLAGS.
build_tsql_parser() {
    ext_env
    cd "$EXT_SRC/contrib/babelfishpg_tsql/antlr"
    if [[ -d /usr/local/include/antlr4-runtime ]]; then
        echo "warning: /usr/local/include/antlr4-runtime exists and comes first on the include path;" \
            "it must be ANTLR $ANTLR_VERSION's" >&2
    fi
    CXXFLAGS="-I$DEST/include/antlr4-runtime" "$cmake" -Wno-dev .
    make -j"$JOBS" all
}

build_tsql() {
    ext_env
    cd "$EXT_SRC/contrib/babelfishpg_tsql"
    local vars=(
        PG_CONFIG="$PG_CONFIG"
        PG_CFLAGS="$TSQL_PG_CFLAGS"
        ANTLR4_RUNTIME_INCLUDE_DIR="$DEST/include/antlr4-runtime"
        ANTLR4_RUNTIME_LIB_DIR="$DEST/lib"
    )
    make -j"$JOBS" "${vars[@]}"
    make install "${vars[@]}"
}

is_elf() { [[ -f $1 && ! -L $1 ]] && readelf -h "$1" >/dev/null 2>&1; }

# set_rpath file rpath: where the build left an rpath (always on babelfishpg_tsql.so, which needs
# lib/libantlr4-runtime.so); files without one (as in the prebuilt tree) keep none.
set_rpath() {
    is_elf "$1" || return 0
    if [[ -n $(patchelf --print-rpath "$1") || $1 == */babelfishpg_tsql.so ]]; then
        patchelf --set-rpath "$2" "$1"
    fi
}

# Relocatable: every rpath $ORIGIN-relative (the literal string, for the dynamic loader); debug
# symbols stripped. Same as the prebuilt tree: bin/* '$ORIGIN/../lib', lib/*.so '$ORIGIN',
# lib/postgresql/*.so '$ORIGIN/..' (that is lib/, where libantlr4-runtime.so.4.9.3 is).
# shellcheck disable=SC2016
finalize_tree() {
    local f
    for f in "$DEST"/bin/* "$DEST"/lib/*.so* "$DEST"/lib/*.a "$DEST"/lib/postgresql/*.so; do
        is_elf "$f" || [[ $f == *.a && -f $f ]] || continue
        strip --strip-debug "$f"
    done
    for f in "$DEST"/bin/*; do set_rpath "$f" '$ORIGIN/../lib'; done
    for f in "$DEST"/lib/*.so*; do set_rpath "$f" '$ORIGIN'; done
    for f in "$DEST"/lib/postgresql/*.so; do set_rpath "$f" '$ORIGIN/..'; done

    # no absolute rpath may remain, and every library must resolve
    local bad=0 rp
    for f in "$DEST"/bin/* "$DEST"/lib/*.so* "$DEST"/lib/postgresql/*.so; do
        is_elf "$f" || continue
        rp=$(patchelf --print-rpath "$f")
        if [[ -n $rp && $rp != '$ORIGIN'* ]]; then
            echo "absolute rpath left: $f: $rp" >&2
            bad=1
        fi
        if ldd "$f" 2>/dev/null | grep -q 'not found'; then
            echo "unresolved library in $f:" >&2
            ldd "$f" | grep 'not found' >&2
            bad=1
        fi
    done
    ((bad == 0))
    "$DEST/bin/postgres" --version
    "$DEST/bin/pg_config" --version
}

write_docs() {
    local doc=$DEST/share/doc/babelfish
    rm -rf "$doc"
    mkdir -p "$doc/licenses"
    cp "$PATCH_FILE" "$doc/raiserror-13000.patch"
    cp "$ANTLR_SRC/LICENSE.txt" "$doc/licenses/antlr4-LICENSE.txt"
    local f
    for f in LICENSE.Apache2 LICENSE.PostgreSQL NOTICE THIRD-PARTY-LICENSES.txt; do
        cp "$EXT_SRC/$f" "$doc/licenses/babelfish_extensions-$f"
    done
    cp "$ENGINE_SRC/COPYRIGHT" "$doc/licenses/postgresql-COPYRIGHT"
    local os
    # shellcheck source=/dev/null
    os=$(. /etc/os-release && echo "${PRETTY_NAME:-$ID}")
    {
        # the prebuilt tree's BUILDINFO, then how this copy was built
        cat <<EOF
Babelfish for PostgreSQL $BBF_VERSION (PostgreSQL $PG_VERSION), Debian 12 bookworm, x86-64
engine      $ENGINE_REPO  $ENGINE_BRANCH  $ENGINE_COMMIT
extensions  $EXT_REPO                $EXT_BRANCH           $EXT_COMMIT + raiserror-13000.patch
antlr4      $ANTLR_REPO (C++ runtime)                                  $ANTLR_VERSION                      $ANTLR_COMMIT
EOF
        echo "configure: ${CONFIGURE_FLAGS[*]}; babelfishpg_tsql built with PG_CFLAGS=\"$TSQL_PG_CFLAGS\" (no -Werror; -fcommon for GCC 12); rpaths set to \$ORIGIN-relative; debug symbols stripped"
        echo "built by ci/babelfish.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ): $os, $(uname -m), $(gcc --version | head -n 1)"
    } >"$doc/BUILDINFO"
}

make_tarball() {
    local t=$OUT/$TARBALL
    rm -f "$t" "$t.part"
    tar -C "$OUT" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$NAME" |
        zstd -q -T0 -"$ZSTD_LEVEL" -o "$t.part"
    mv "$t.part" "$t"
    ls -l "$t"
    (cd "$OUT" && sha256sum "$TARBALL")
}

# -- main --------------------------------------------------------------------------------------
main() {
    mkdir -p "$LOGS"
    echo "Babelfish $BBF_VERSION (PostgreSQL $PG_VERSION): building into $DEST with $JOBS jobs; work folder $WORK"
    if [[ $(uname -m) != x86_64 ]] || ! grep -qs '^VERSION_CODENAME=bookworm' /etc/os-release; then
        echo "warning: not Debian 12 bookworm on x86-64; the tarball will still be named $TARBALL" >&2
    fi

    if [[ ${SKIP_APT:-0} != 1 ]]; then
        step "apt build packages" install_packages
    fi
    step "download sources" download_sources
    step "unpack sources, apply raiserror-13000.patch" unpack_and_patch

    rm -rf "${DEST:?}" "${OUT:?}/$TARBALL"
    step "ANTLR $ANTLR_VERSION C++ runtime (cmake, make, install)" build_antlr_runtime
    step "PostgreSQL $PG_VERSION configure" configure_engine
    step "PostgreSQL $PG_VERSION make" make_engine
    step "PostgreSQL install + contrib" install_engine
    step "babelfishpg_money" build_extension babelfishpg_money
    step "babelfishpg_common" build_extension babelfishpg_common
    step "babelfishpg_tds" build_extension babelfishpg_tds
    step "babelfishpg_tsql: ANTLR grammar + parser library" build_tsql_parser
    step "babelfishpg_tsql" build_tsql
    step "licences, patch, BUILDINFO" write_docs
    step "strip, \$ORIGIN rpaths, checks" finalize_tree
    step "tarball (zstd -$ZSTD_LEVEL)" make_tarball

    echo "done in $(mmss $((SECONDS - T0))):"
    echo "  tree:    $DEST"
    echo "  tarball: $OUT/$TARBALL"
    echo "use it:    export APPLIER_BABELFISH=$OUT/$TARBALL"
}

# Sourcing the file (for its functions) does not build.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
