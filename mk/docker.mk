# A Docker engine for the pulsar-container target (docs/containers.md). Included from the Makefile
# after its variables.
#
# `make docker` uses an engine that already answers `docker info` as it is (a user's own). Where none
# answers, it installs Debian's docker.io when dockerd is missing and starts dockerd in the background
# the way it works on a root Debian machine without systemd: overlay2, the host's firewall and IP
# forwarding left alone, its data root, exec root, pid file and log in DOCKER_STATE. It also installs
# mmdebstrap, which the target uses to make its Debian base image where no registry serves
# apachepulsar/pulsar. Every wait is bounded.
#
# `make docker-stop` stops only an engine `make docker` started (by its pid file), and removes what it
# leaves on the host: the docker0 bridge and the network-namespace mount. Its data root (the images
# built once per machine) stays, as a cache; `make docker-clean` removes it too.

# The including Makefile keeps its own default goal (saved here, restored at the end).
DOCKER_SAVED_GOAL := $(.DEFAULT_GOAL)

DOCKER_STATE ?= $(or $(PULSAR_CONFORMANCE_CACHE),$(HOME)/.cache/pulsar-conformance)/docker
DOCKER_PIDFILE := $(DOCKER_STATE)/dockerd.pid
DOCKER_LOG := $(DOCKER_STATE)/dockerd.log
DOCKER_DATA_ROOT := $(DOCKER_STATE)/data-root
DOCKER_EXEC_ROOT := $(DOCKER_STATE)/exec-root
DOCKER_START_TIMEOUT ?= 60
DOCKER_STOP_TIMEOUT ?= 30
DOCKER_APT := DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends
DOCKERD_FLAGS := --storage-driver overlay2 --iptables=false --ip-forward=false \
	--data-root $(DOCKER_DATA_ROOT) --exec-root $(DOCKER_EXEC_ROOT) --pidfile $(DOCKER_PIDFILE)

.PHONY: docker docker-stop docker-clean

docker:
	@if timeout 5 docker info >/dev/null 2>&1; then \
	  echo "docker: an engine already answers; using it as it is"; \
	else \
	  if ! command -v dockerd >/dev/null 2>&1; then \
	    echo "docker: installing Debian's docker.io"; \
	    apt-get update -qq && $(DOCKER_APT) docker.io || exit 1; \
	  fi; \
	  mkdir -p $(DOCKER_STATE) $(DOCKER_DATA_ROOT) $(DOCKER_EXEC_ROOT); \
	  if [ -f $(DOCKER_PIDFILE) ] && kill -0 "$$(cat $(DOCKER_PIDFILE))" 2>/dev/null; then \
	    echo "docker: dockerd $$(cat $(DOCKER_PIDFILE)) (ours) is running but not answering yet"; \
	  else \
	    rm -f $(DOCKER_PIDFILE); \
	    echo "--- $$(date -u +%FT%TZ) make docker" >> $(DOCKER_LOG); \
	    setsid nohup dockerd $(DOCKERD_FLAGS) >> $(DOCKER_LOG) 2>&1 < /dev/null & \
	  fi; \
	  waited=0; \
	  until timeout 5 docker info >/dev/null 2>&1; do \
	    if [ $$waited -ge $(DOCKER_START_TIMEOUT) ]; then \
	      echo "docker: dockerd did not answer within $(DOCKER_START_TIMEOUT) s; last lines of $(DOCKER_LOG):"; \
	      tail -n 15 $(DOCKER_LOG); exit 1; \
	    fi; \
	    sleep 1; waited=$$((waited + 1)); \
	  done; \
	  echo "docker: dockerd $$(cat $(DOCKER_PIDFILE) 2>/dev/null) answers (log: $(DOCKER_LOG)); stop it with make docker-stop"; \
	fi
	@command -v mmdebstrap >/dev/null 2>&1 || { echo "docker: installing mmdebstrap (the local image's base)"; \
	  apt-get update -qq && $(DOCKER_APT) mmdebstrap; }

docker-stop:
	@if [ ! -f $(DOCKER_PIDFILE) ]; then \
	  echo "docker-stop: no engine started by make docker ($(DOCKER_PIDFILE) absent); nothing stopped"; \
	else \
	  pid=$$(cat $(DOCKER_PIDFILE)); \
	  if kill -0 $$pid 2>/dev/null && grep -q dockerd /proc/$$pid/comm 2>/dev/null; then \
	    kill -TERM $$pid; waited=0; \
	    while kill -0 $$pid 2>/dev/null; do \
	      if [ $$waited -ge $(DOCKER_STOP_TIMEOUT) ]; then \
	        echo "docker-stop: dockerd $$pid still running after $(DOCKER_STOP_TIMEOUT) s: SIGKILL"; \
	        kill -KILL $$pid 2>/dev/null; sleep 1; break; \
	      fi; \
	      sleep 1; waited=$$((waited + 1)); \
	    done; \
	    echo "docker-stop: dockerd $$pid stopped"; \
	  else \
	    echo "docker-stop: dockerd $$pid is not running"; \
	  fi; \
	  rm -f $(DOCKER_PIDFILE); \
	  for mount in $$(awk '$$2 ~ "^($(DOCKER_EXEC_ROOT)|/run/docker)/netns/" {print $$2}' /proc/mounts); do \
	    umount $$mount 2>/dev/null || true; \
	  done; \
	  ip link del docker0 2>/dev/null || true; \
	fi

docker-clean: docker-stop
	rm -rf $(DOCKER_STATE)

.DEFAULT_GOAL := $(DOCKER_SAVED_GOAL)
