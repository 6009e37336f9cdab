# Sourced by scripts/main.sh and scripts/test.sh: `step NAME` starts a timed step
# (closing the previous one), and `steps_summary` prints how long each took, so a
# slow set-up shows where its time went.
_steps_names=()
_steps_secs=()
_steps_started=$(date +%s)
_step_name=
_step_started=

_step_close() {
  if [ -n "$_step_name" ]; then
    _steps_names+=("$_step_name")
    _steps_secs+=("$(($(date +%s) - _step_started))")
  fi
  _step_name=
}

step() {
  _step_close
  _step_name="$*"
  _step_started=$(date +%s)
  printf '\n\033[1m== %s\033[0m\n' "$*" >&2
}

steps_summary() {
  _step_close
  local i
  printf '\n\033[1m== time per step\033[0m\n' >&2
  for i in "${!_steps_names[@]}"; do
    printf '%6d s  %s\n' "${_steps_secs[$i]}" "${_steps_names[$i]}" >&2
  done
  printf '%6d s  in all\n' "$(($(date +%s) - _steps_started))" >&2
}
