# Sourced (not run) by every device-call script of benchmarks/: install the carried wheels
# into /tmp/site and lay out the cuzk_sim namespace in /tmp/shim (the repository's
# cuzk_sim, reference and gpu folders as cuzk_sim, cuzk_sim.reference, cuzk_sim.gpu), then
# export PYTHONPATH. Reads: WHL (the wheels' folder; default .whl, else ../.whl), PIP_LOG
# (default $OUT/pip.log), PROFILE (the hypothesis profile, default dev).
whl=${WHL:-.whl}; [ -d "$whl" ] || whl=../.whl
pip_log=${PIP_LOG:-$OUT/pip.log}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  "$whl"/*.whl >"$pip_log" 2>&1 || { echo "wheel install failed"; tail "$pip_log"; }
rm -rf /tmp/shim && mkdir -p /tmp/shim
cp -r cuzk_sim /tmp/shim/ && cp -r reference /tmp/shim/cuzk_sim/reference \
  && cp -r gpu /tmp/shim/cuzk_sim/gpu
export PYTHONPATH=/tmp/shim:/tmp/site PYTHONUNBUFFERED=1 CUZK_HYPOTHESIS_PROFILE=${PROFILE:-dev}
