# The harness as a container image (harness_image/, docs/ci.md). Included from the Makefile after its
# variables.
#
# `make image` prepares what the image carries (the virtualenv's pins as wheels, the built Java, Go
# and Rust drivers, node_modules) and builds it with the engine that answers; only where none answers
# does it start Debian's dockerd (make docker), so a CI runner's own engine is used as it is. It prints
# the image's reference (pulsar-conformance:<version>-<digest>, also tagged pulsar-conformance:latest) and,
# with IMAGE_REF_FILE=FILE, writes it into FILE.

# The including Makefile keeps its own default goal (saved here, restored at the end).
IMAGE_SAVED_GOAL := $(.DEFAULT_GOAL)

IMAGE_REF_FILE ?=

.PHONY: image

image: install java-drivers native-drivers node_modules
	@timeout 5 docker info >/dev/null 2>&1 || $(MAKE) --no-print-directory docker
	$(PY) -m harness_image.build $(if $(IMAGE_REF_FILE),--ref-file '$(IMAGE_REF_FILE)')

.DEFAULT_GOAL := $(IMAGE_SAVED_GOAL)
