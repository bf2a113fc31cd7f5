#!/usr/bin/env bash
# Install the pinned Bun runtime and the official bunqueue package (server + TS client)
# with `npm ci` into $PGQUEUE_JS_DIR (default: <repo>/.cache/js), then check that the
# Bun binary runs. Idempotent and non-interactive; needs only node and npm.
#
# Output: progress goes to stderr; the only line on stdout is the absolute path of a
# working bun binary ($PGQUEUE_JS_DIR/bin/bun, a symlink to the real binary).
#
# Env:
#   PGQUEUE_JS_DIR      install directory (default <repo>/.cache/js)
#   PGQUEUE_JS_FORCE=1  reinstall even when the stamp says the install is current
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dir="${PGQUEUE_JS_DIR:-$repo/.cache/js}"

log() { printf 'install.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v node >/dev/null 2>&1 || die "node is not on PATH"
command -v npm >/dev/null 2>&1 || die "npm is not on PATH"

want_bun="$(node -p "require('$here/package.json').dependencies.bun")"
[ -n "$want_bun" ] || die "cannot read the pinned bun version from $here/package.json"

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# One installer at a time per directory (CI may start several test processes).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$dir/.install.lock"
    flock 9
fi

lock_sum="$( (cat "$here/package.json" "$here/package-lock.json") | sha256sum | cut -d' ' -f1)"
stamp="$dir/.installed.sha256"

# Prints the version when $1 is a bun binary that runs, fails otherwise.
bun_runs() {
    [ -x "$1" ] || return 1
    local v
    v="$("$1" --version 2>/dev/null)" || return 1
    [ -n "$v" ] || return 1
    printf '%s\n' "$v"
}

# Finds a runnable bun binary inside $dir/node_modules. The postinstall of the `bun`
# package replaces the placeholder node_modules/bun/bin/bun.exe with the real binary;
# when install scripts are blocked the placeholder stays, and the real binary is the one
# shipped by the platform package @oven/bun-<os>-<arch>[-musl|-baseline]/bin/bun.
find_bun() {
    local c
    for c in "$dir/node_modules/bun/bin/bun.exe" "$dir"/node_modules/@oven/bun-*/bin/bun; do
        [ -e "$c" ] || continue
        if bun_runs "$c" >/dev/null; then
            printf '%s\n' "$c"
            return 0
        fi
    done
    return 1
}

current=0
if [ "${PGQUEUE_JS_FORCE:-0}" != "1" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ] \
    && [ -d "$dir/node_modules/bunqueue" ] && [ -x "$dir/bin/bun" ] && bun_runs "$dir/bin/bun" >/dev/null; then
    current=1
    log "up to date in $dir"
fi

if [ "$current" = "0" ]; then
    log "installing bun@$want_bun and bunqueue into $dir (npm ci)"
    rm -f "$stamp"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (
        cd "$dir"
        npm ci --no-audit --no-fund --loglevel=error </dev/null >&2
    ) || die "npm ci failed in $dir"

    bin="$(find_bun)" || true
    if [ -z "${bin:-}" ] && [ -f "$dir/node_modules/bun/install.js" ]; then
        # The bun postinstall did not run (blocked install scripts) and no platform
        # binary ran either: try the postinstall by hand once.
        log "bun binary not runnable; running the bun postinstall by hand"
        (cd "$dir/node_modules/bun" && node install.js </dev/null >&2) || true
        bin="$(find_bun)" || true
    fi
    [ -n "${bin:-}" ] || die "no runnable bun binary under $dir/node_modules (looked at bun/bin/bun.exe and @oven/bun-*/bin/bun)"

    mkdir -p "$dir/bin"
    ln -sfn "$bin" "$dir/bin/bun"
    printf '%s\n' "$lock_sum" >"$stamp"
fi

got="$(bun_runs "$dir/bin/bun")" || die "$dir/bin/bun does not run"
[ "$got" = "$want_bun" ] || die "bun --version says $got, expected $want_bun"
[ -f "$dir/node_modules/bunqueue/package.json" ] || die "bunqueue is missing from $dir/node_modules"
bq="$(node -p "require('$dir/node_modules/bunqueue/package.json').version")"
log "bun $got ($(readlink -f "$dir/bin/bun")), bunqueue $bq"
printf '%s\n' "$dir/bin/bun"
