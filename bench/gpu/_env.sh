# Sourced by the bench/gpu/*.sh scripts: what every command on a GPU host starts with.
# NVLink multicast stays off; carried wheels (WHL=dir) go to /tmp/site; the checkout is
# importable as `peerwatch.app` / `peerwatch.probes` (a folder of two links, as the wheel
# lays them out); the working directory is the repository root.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
if [ -n "${WHL:-}" ] && ls "$WHL"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHL"/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
mkdir -p /tmp/pw-src/peerwatch
ln -sfn "$PWD/app" /tmp/pw-src/peerwatch/app
ln -sfn "$PWD/probes" /tmp/pw-src/peerwatch/probes
export PYTHONPATH="/tmp/pw-src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
