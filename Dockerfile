# peerwatch: one image for the server and the probe.
#   server:  docker run -p 8000:8000 -v pw:/var/lib/peerwatch peerwatch
#   probe:   docker run --gpus all --pid=host peerwatch probe --server URL --token T
# For GPU hosts build with CuPy:  --build-arg EXTRAS=gpu  (cupy-cuda12x, CUDA 12 drivers);
# for CUDA 13 drivers add --build-arg CUPY=cupy-cuda13x and leave EXTRAS empty.
#
# The source tree is installed in place (editable) because the server reads migrations/ and
# frontend/ from the repository's top level, which the design card fixes.
FROM python:3.11-slim
ARG EXTRAS=""
ARG CUPY=""
RUN useradd --system --uid 10001 --home-dir /var/lib/peerwatch --create-home peerwatch
WORKDIR /opt/peerwatch
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY probes ./probes
COPY migrations ./migrations
COPY frontend ./frontend
COPY deploy ./deploy
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir -e ".${EXTRAS:+[$EXTRAS]}" ${CUPY}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PEERWATCH_DATA_DIR=/var/lib/peerwatch
USER peerwatch
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
ENTRYPOINT ["peerwatch"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
