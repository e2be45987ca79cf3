#!/bin/sh
# A CI job in plain shell (docs/ci.md): the suite in the harness image against a broker that already
# runs, then the report. Exits with the run's exit code: 0 when every verdict is expected (known
# divergences included), 1 an unexpected failure, 2 a harness or target error, 3 a case unanswered.
#
#   examples/ci/conformance-job.sh pulsar://127.0.0.1:6650[,http://127.0.0.1:8080] [known-divergences.yaml]
#
# IMAGE (default pulsar-conformance:latest, what make image tags) and OUT (default
# ./conformance-report) may be set; more arguments for the run go in RUN_ARGS (e.g. "--pip 344").
set -u
usage="usage: conformance-job.sh pulsar://HOST:PORT[,http://HOST:PORT] [known-divergences.yaml]"
target=${1:?$usage}
known=${2:-}
image=${IMAGE:-pulsar-conformance:latest}
out=${OUT:-conformance-report}
here=$(pwd)
case $out in /*) ;; *) out=$here/$out ;; esac
mkdir -p "$out"

# The job's folder and the report folder at the same paths inside the container, so a relative
# known-divergences path means the same there.
set -- run --target "url:$target" --out "$out"
if [ -n "$known" ]; then set -- "$@" --known-divergences "$known"; fi
code=0
# shellcheck disable=SC2086 # RUN_ARGS is split into arguments on purpose
docker run --rm --network host -v "$here:$here" -v "$out:$out" -w "$here" "$image" "$@" ${RUN_ARGS:-} || code=$?

docker run --rm -v "$out:$out" "$image" report --out "$out" --quiet \
  || echo "conformance-job: the report could not be rendered; the results and junit.xml are in $out"
# The container wrote as root; the files go back to whoever runs the job.
docker run --rm -v "$out:$out" --entrypoint chown "$image" -R "$(id -u):$(id -g)" "$out"

echo "conformance-job: exit $code; JUnit XML: $out/junit.xml; report: $out/allure-report/index.html"
exit "$code"
