# syntax=docker/dockerfile:1
#
# EventScript worker image: `eventscript run` on a topology mounted at /etc/eventscript/topology.yaml.
#
#   docker build -t eventscript .
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

ARG PYTHON_IMAGE=python:3.11-slim

# ---- build: install the package and its dependencies (no dev extras) into a virtualenv ------------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

RUN python -m venv /opt/eventscript
ENV PATH=/opt/eventscript/bin:$PATH

WORKDIR /src
# README.md is the package's readme (pyproject.toml); service/ holds the package itself.
COPY pyproject.toml README.md ./
COPY service ./service
RUN pip install . \
 && eventscript --help >/dev/null

# ---- runtime -------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

ARG UID=10001
ARG GID=10001

LABEL org.opencontainers.image.title="eventscript" \
      org.opencontainers.image.description="EventScript: regular expressions with actions, run as keyed stream processors on Kafka" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN groupadd --system --gid "${GID}" eventscript \
 && useradd --system --uid "${UID}" --gid "${GID}" --home-dir /app --no-create-home \
            --shell /usr/sbin/nologin eventscript \
 && mkdir -p /app /etc/eventscript /var/lib/eventscript \
 && chown "${UID}:${GID}" /var/lib/eventscript

COPY --from=build /opt/eventscript /opt/eventscript

ENV PATH=/opt/eventscript/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    EVENTSCRIPT_STATE_DIR=/var/lib/eventscript \
    HEALTHCHECK_PORT=8080

WORKDIR /app
# The shipped example topologies and programs (e.g. /app/topologies/sensors/overheat.es).
COPY topologies/ /app/topologies/

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
