# peerwatch images, installed from the wheel (what `pip install` gives), never the source tree.
#   server (default target): docker build -t peerwatch .
#     docker run -p 8000:8000 -v pw:/var/lib/peerwatch peerwatch
#   probe only (no FastAPI, SQLAlchemy, psycopg, plotly): docker build --target probe -t peerwatch-probe .
#     docker run --gpus all --pid=host -v /etc/peerwatch/probe-token:/etc/peerwatch/probe-token:ro peerwatch-probe probe --server URL
# For GPU hosts build with CuPy: --build-arg EXTRAS=gpu (cupy-cuda12x, CUDA 12 drivers);
# for CUDA 13 drivers add --build-arg CUPY=cupy-cuda13x and leave EXTRAS empty.

FROM python:3.11-slim AS wheel
WORKDIR /src
COPY pyproject.toml setup.py README.md MANIFEST.in alembic.ini ./
COPY app ./app
COPY probes ./probes
COPY migrations ./migrations
COPY frontend ./frontend
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.11-slim AS base
RUN useradd --system --uid 10001 --home-dir /var/lib/peerwatch --create-home peerwatch
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PEERWATCH_DATA_DIR=/var/lib/peerwatch
ENTRYPOINT ["peerwatch"]

FROM base AS probe
ARG EXTRAS=""
ARG CUPY=""
RUN --mount=type=bind,from=wheel,source=/dist,target=/dist \
    python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir "$(echo /dist/peerwatch-*.whl)${EXTRAS:+[$EXTRAS]}" ${CUPY}
USER 10001
CMD ["probe", "--help"]

FROM probe AS server
ARG EXTRAS=""
USER 0
RUN --mount=type=bind,from=wheel,source=/dist,target=/dist \
    /opt/venv/bin/pip install --no-cache-dir "$(echo /dist/peerwatch-*.whl)[server${EXTRAS:+,$EXTRAS}]"
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
