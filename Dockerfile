# duplex-proxy container image.
#
#   docker build -t duplex-proxy .
#   docker run --rm -p 8080:8080 duplex-proxy            # the demo route, in-memory store
#
# Two stages: the build stage makes one virtualenv with deploy/build-venv.sh (the locked
# runtime dependencies, no torch, and the project's wheel); the runtime stage is the
# slim Python image, that virtualenv, the shipped config.toml and an unprivileged user.
# The Silero ONNX model comes inside the silero-vad wheel. Config keys are overridden
# with DUPLEX_PROXY__SECTION__KEY variables, or mount another file over
# /etc/duplex-proxy/config.toml.

FROM python:3.11-slim-bookworm AS build
# uv from PyPI, pinned: the same installer the repository's CI uses.
RUN pip install --no-cache-dir uv==0.13.9
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    UV_PYTHON_DOWNLOADS=never \
    BUILD_PYTHON=/usr/local/bin/python3.11
WORKDIR /src
COPY pyproject.toml uv.lock README.md LICENSE ./
COPY proxy/ proxy/
COPY shim/ shim/
COPY deploy/build-venv.sh deploy/build-venv.sh
RUN sh deploy/build-venv.sh /opt/duplex-proxy /src

FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 10001 duplex \
    && useradd --system --uid 10001 --gid duplex --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin duplex
COPY --from=build /opt/duplex-proxy /opt/duplex-proxy
COPY config.toml /etc/duplex-proxy/config.toml
ENV PATH=/opt/duplex-proxy/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080
# Liveness of the process itself (readiness, /readyz, is the orchestrator's business).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('DUPLEX_PROXY__SERVER__PORT', '8080') + '/healthz', timeout=2)"]
# SIGTERM drains: /readyz turns 503, sessions are persisted and clients get 1012.
STOPSIGNAL SIGTERM
ENTRYPOINT ["duplex-proxy"]
CMD ["serve", "--config", "/etc/duplex-proxy/config.toml"]
