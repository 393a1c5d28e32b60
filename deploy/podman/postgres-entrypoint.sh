#!/usr/bin/env bash
# The official postgres image's environment contract, from Debian's packages, for a machine with
# no image registry (see postgres.Containerfile): on an empty PGDATA, initdb with POSTGRES_USER as
# the superuser and POSTGRES_PASSWORD as its password, create POSTGRES_DB, accept password logins
# (scram-sha-256) from any address and trust local sockets (so `pg_isready` and `psql` inside the
# container work as in the official image); then run `postgres` with the command's arguments.
# Not covered: /docker-entrypoint-initdb.d, POSTGRES_INITDB_ARGS, *_FILE secrets — compose.yaml
# uses none of them.
set -euo pipefail

if [ "${1:-}" = "" ] || [ "${1:0:1}" = "-" ]; then
    set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
    exec "$@"
fi
# `postgres --version` and the like answer without a cluster, as in the official image.
for arg in "${@:2}"; do
    case "$arg" in -V | --version | --help | -'?' | --describe-config | -C) exec "$@" ;; esac
done

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA
if [ "$(id -u)" = 0 ]; then
    install -d -o postgres -g postgres -m 700 "$PGDATA"
    install -d -o postgres -g postgres -m 2775 /var/run/postgresql
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "error: POSTGRES_PASSWORD is not set: the database would accept no password login; set it (compose.yaml does)" >&2
        exit 1
    fi
    user="${POSTGRES_USER:-postgres}"
    db="${POSTGRES_DB:-$user}"
    initdb --username="$user" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    printf '\nhost all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
    # A first start on the socket only, to create the database, as the official image does.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "$db" != postgres ]; then
        psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres -q -c "CREATE DATABASE \"$db\""
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo "initialised $PGDATA: superuser $user, database $db"
fi

shift
exec postgres -c listen_addresses='*' "$@"
