# memstrata: one image for `memstrata serve`, `memstrata worker` and a Ray node.
#   docker build -t memstrata .                      # everything (extras "all")
#   docker build --build-arg EXTRAS=grpc,kafka .     # query service + stream worker only
# BASE must be a Debian-like image with python3 (>= 3.11) and its venv module.
# PIP_ARGS lets an offline build install from a wheelhouse in the build context
# (e.g. --build-arg PIP_ARGS="--no-index --find-links=/src/wheelhouse").
ARG BASE=python:3.11-slim-bookworm

# ---- build: a virtualenv with memstrata and its extras ----------------------
# checkov:skip=CKV_DOCKER_7: BASE is an ARG whose default is pinned (python:3.11-slim-bookworm)
FROM ${BASE} AS build
ARG EXTRAS=all
ARG PIP_ARGS=""
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY . /src
SHELL ["/bin/sh", "-eu", "-c"]
# hadolint ignore=SC2086
RUN python3 -m venv /opt/memstrata \
 && /opt/memstrata/bin/pip install ${PIP_ARGS} "/src[${EXTRAS}]" \
 && /opt/memstrata/bin/python -m compileall -q /opt/memstrata/lib \
 && install -m 0755 /src/docker/entrypoint.sh /opt/memstrata/bin/memstrata-entrypoint \
 && /opt/memstrata/bin/memstrata --version

# ---- runtime: the virtualenv on a clean base, no compilers, no pip caches ----
FROM ${BASE}
LABEL org.opencontainers.image.title="memstrata" \
      org.opencontainers.image.description="Long-term memory for LLM assistants" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/memstrata /opt/memstrata
# Everything memstrata writes (stores, keys, spend, caches, temp files) lives under
# /data, so the root filesystem can be read-only: mount a volume at /data.
ENV PATH=/opt/memstrata/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MEMSTRATA_DATA_DIR=/data \
    HOME=/data/home \
    XDG_CACHE_HOME=/data/cache \
    TMPDIR=/data/tmp \
    MEMSTRATA_SERVICE_HOST=0.0.0.0 \
    MEMSTRATA_SERVICE_PORT=50051 \
    MEMSTRATA_SERVICE_METRICS_PORT=9090 \
    MEMSTRATA_STREAM_METRICS_PORT=9091 \
    MEMSTRATA_STREAM_METRICS_ADDR=0.0.0.0
# Numeric non-root user (no /etc/passwd entry needed); /data is its own. The commands
# are also linked into /usr/local/bin: KubeRay starts nodes through a login shell, whose
# profile resets PATH.
RUN mkdir -p /data/home /data/cache /data/tmp \
 && chown -R 10001:10001 /data \
 && chmod 0750 /data \
 && for b in memstrata memstrata-entrypoint ray; do \
      if [ -e "/opt/memstrata/bin/$b" ]; then ln -s "/opt/memstrata/bin/$b" /usr/local/bin/; fi; \
    done
VOLUME ["/data"]
USER 10001:10001
WORKDIR /data
EXPOSE 50051 9090 9091
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["memstrata-entrypoint", "healthcheck"]
ENTRYPOINT ["memstrata-entrypoint"]
CMD ["serve"]
