# Shared helpers for ops scripts: logging and installing missing Debian packages (only what is missing,
# from the machine's configured mirrors).
# What the ops scripts keep across `ops/stack purge` (the broker's binary, librdkafka, ops/bench-ab's builds).
OPS_CACHE=${ATTEST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/attest-worker}

say() { printf '[%s] %s\n' "${OPS_NAME:-ops}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${OPS_NAME:-ops}" "$*" >&2; exit 1; }

apt_install() {  # apt_install pkg...  installs the ones not yet installed
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "need root to apt-get install ${missing[*]}"
    say "apt-get install ${missing[*]}"
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
        || die "apt-get install ${missing[*]} failed"
}

# The Swift toolchain is a precondition of the machine, not something these scripts install.
require_swift() {
    command -v swift >/dev/null || [ -x /opt/swift/usr/bin/swift ] || die "the Swift toolchain is not installed"
    command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH
}
