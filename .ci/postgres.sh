#!/usr/bin/env bash
# Starts a throwaway PostgreSQL for abridge's tests (and for trying the
# PostgreSQL store by hand), listening on 127.0.0.1 and a unix socket under
# $ABRIDGE_PG_DIR, owned by a non-root user. Prints the line to export:
#
#   eval "$(.ci/postgres.sh)"     # start (or reuse) it; sets ABRIDGE_TEST_POSTGRES
#   .ci/postgres.sh stop          # stop it
#
# Installs Debian's postgresql package when no server binaries are found
# (needs root). Logins are trusted: the cluster accepts local connections
# only, and holds nothing but test data.
set -euo pipefail

dir="${ABRIDGE_PG_DIR:-/tmp/abridge-pg}"
port="${ABRIDGE_PG_PORT:-54329}"
db=abridge
user=abridge

bin_dir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1; }

if [ -z "$(bin_dir)" ] || [ ! -x "$(bin_dir)/initdb" ]; then
  echo "installing postgresql from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
bin="$(bin_dir)"

# The server refuses to run as root: run it as the owner of $dir.
if [ "$(id -u)" -eq 0 ]; then
  owner=postgres
  id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home "$owner"
  as_owner() { runuser -u "$owner" -- "$@"; }
else
  owner="$(id -un)"
  as_owner() { "$@"; }
fi

if [ "${1:-start}" = stop ]; then
  if [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2 || true
  fi
  exit 0
fi

mkdir -p "$dir"
chown "$owner" "$dir" 2>/dev/null || true
chmod 700 "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  as_owner "$bin/initdb" -D "$dir/data" -U "$user" -A trust -E UTF8 --no-instructions >&2
fi
if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >&2
fi
if ! as_owner "$bin/psql" -h "$dir" -p "$port" -U "$user" -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  as_owner "$bin/createdb" -h "$dir" -p "$port" -U "$user" "$db" >&2
fi
echo "export ABRIDGE_TEST_POSTGRES=postgresql://$user@127.0.0.1:$port/$db"
