# The bench image: `pipeline` (the one CLI) and `backend`, the task folders a run reads, and
# PostgreSQL's server binaries, so a run with no DATABASE_URL starts its own throwaway cluster
# exactly as on a workstation. Its default command is the README's main job.
#
#   docker build -t mcp-pattern-bench .
#   mkdir -p results && sudo chown 10001 results      # the image runs as uid 10001 (see USER below)
#   docker run --rm --shm-size=1g -v "$PWD/results:/bench/results" mcp-pattern-bench
#                                                     # = pipeline --all --models oracle --k 3
#   docker run --rm --shm-size=1g -v "$PWD/results:/bench/results" -e OPENAI_API_KEY \
#       mcp-pattern-bench --module tool_orchestrator --k 3 --models gpt-5-mini
#
# --shm-size: the embedded cluster lives on /dev/shm (≈ 100 MB with --jobs 2), and a container's
# /dev/shm is 64 MB unless raised. The Kubernetes manifest in deploy/kubernetes/ runs this image;
# docs/deploy.md says what was verified with Podman here and what needs a registry.

# --- Build: the release binaries. .git is in the context so the binaries embed their commit
# (records and gate G2 name the build; without it G2 refuses to pin one).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p pipeline -p backend

# --- Run.
FROM debian:bookworm-slim
# Bookworm's PostgreSQL 15 server binaries, where the embedded cluster looks for them
# (/usr/lib/postgresql/15/bin). The package also creates the `postgres` system user the cluster
# drops to when the bench runs as root (`docker run --user 0`). No cluster of the package's own:
# the bench makes a throwaway one per run.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/no-main-cluster.conf \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# A fixed, numeric non-root user, so Kubernetes' runAsNonRoot can verify it and initdb (which
# needs a passwd entry for the uid it runs as) finds one.
RUN useradd --uid 10001 --user-group --home-dir /bench --create-home --shell /usr/sbin/nologin bench \
    && install -d -o 10001 -g 10001 /bench/results
COPY --from=build /src/target/release/pipeline /src/target/release/backend /usr/local/bin/
COPY tasks /bench/tasks
ENV MCPBENCH_TASKS_DIR=/bench/tasks
WORKDIR /bench
USER 10001:10001
ENTRYPOINT ["pipeline"]
CMD ["--all", "--models", "oracle", "--k", "3"]
