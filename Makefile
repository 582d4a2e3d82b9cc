# linerate — the two commands:  make lab   and   make test
# Both run as root on a fresh Debian 12 machine and install what they need.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON   ?= python3
VENV     := .venv
VPY      := $(VENV)/bin/python
ANSIBLE_PLAYBOOK := $(VENV)/bin/ansible-playbook
LAB_NODES ?= 4
# Unit tests in parallel workers (pytest-xdist): many wait on simulated tools, not the CPU.
# --dist loadfile: one worker per file, so a module fixture (the render preview) is built once
# (pytest-xdist 3.8 on pytest 9 ignores xdist_group marks: --dist loadgroup is plain load here).
UNIT_JOBS ?= 4
# roce (default) or infiniband: which lab `make lab` builds and converges.
TRANSPORT ?= roce
ifeq ($(TRANSPORT),infiniband)
INVENTORY ?= inventory/lab-ib
LAB_UP_ARGS := --transport infiniband --inventory $(notdir $(INVENTORY))
else ifeq ($(TRANSPORT),roce)
INVENTORY ?= inventory/lab
LAB_UP_ARGS := --nodes $(LAB_NODES)
else
$(error TRANSPORT=$(TRANSPORT) is not allowed (allowed: roce, infiniband))
endif
export CONTAINERS_CONF := $(CURDIR)/lab/containers.conf
export ANSIBLE_CONFIG  := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# Debian packages: podman and runc for the lab's nodes, debootstrap for their
# image, ibsim/opensm/infiniband-diags for the simulated InfiniBand fabric,
# openmpi for nccl-tests' launcher, python3-venv for the virtualenv, openssl
# for the README quickstart's vault password (its test runs it).
DEB_PACKAGES := podman runc catatonit debootstrap uidmap iproute2 openssh-client \
                ibsim-utils libumad2sim0 opensm infiniband-diags \
                python3-venv openssl

# Every role with a molecule scenario; each converges in a container of the
# lab's node image (podman), checks idempotence and verifies real state.
MOLECULE_ROLES := $(sort $(patsubst roles/%/molecule/default/molecule.yml,%,$(wildcard roles/*/molecule/default/molecule.yml)))
MOLECULE_TARGETS := $(addprefix molecule-,$(MOLECULE_ROLES))

.PHONY: help changelog deps venv lab lab-ib lab-up lab-down lab-status lab-image test test-unit test-integration lint sanity release-check docs-check molecule bench bench-fleet clean fuzz mutation
.PHONY: $(MOLECULE_TARGETS)

help:
	@echo "make lab         bring the lab up, run playbooks/site.yml on it, print the report"
	@echo "                 (TRANSPORT=infiniband: the InfiniBand lab, OpenSM on ibsim)"
	@echo "make test        the whole test suite (unit, lint, sanity, molecule, core integration against the lab)"
	@echo "make test-integration  every integration test, the fault matrix included (longer)"
	@echo "make test-browser  report.html in headless Chromium (installs chromium): heat-map titles, nothing fetched"
	@echo "make sanity      ansible-test sanity of the collection (docs-check: ansible-doc of every plugin)"
	@echo "make release-check  the release gates on the artifact: the README's built-collection block in a fresh venv,"
	@echo "                 then sanity, galaxy-importer, ansible-lint production under ansible-core 2.19, 2.20, 2.21 (slow)"
	@echo "make lab-down    remove everything the lab made"
	@echo "make bench       benchmarks (bench/): the fleet model, then the lab's"
	@echo "make bench-fleet the fleet model alone (verification plan/report code, 64..2000 nodes, no lab)"
	@echo "make fuzz        fuzz every parser: FUZZ_EXAMPLES (20000) mutated real outputs each"
	@echo "make mutation    mutation testing of the intent validation and switch drivers (slow)"
	@echo "make changelog   lint changelogs/fragments; VERSION=x.y.z releases them (changelog.yaml, CHANGELOG.md)"

deps: .make/deps
.make/deps: Makefile
	@mkdir -p .make
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@touch $@

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt requirements-dev.txt
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	@touch $@

lab-up: deps venv
	$(VPY) lab/labctl.py up $(LAB_UP_ARGS)

# The verification summary is printed whether the play passed or not; the
# target fails when the play did.
lab: lab-up
	@rc=0; $(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/site.yml -e verify_fabric_when_requested=false || rc=$$?; \
	$(VPY) scripts/report_summary.py $(INVENTORY)-output/reports/latest || true; exit $$rc

lab-ib:
	@$(MAKE) --no-print-directory lab TRANSPORT=infiniband

lab-status:
	@$(VPY) lab/labctl.py status

lab-down:
	@if [ -x $(VPY) ]; then $(VPY) lab/labctl.py down --image; else $(PYTHON) lab/labctl.py down --image; fi
	rm -rf .make

test-unit: venv
	$(VPY) -m pytest -q -n $(UNIT_JOBS) --dist loadfile tests/unit

# The changelog (antsibull-changelog, changelogs/config.yaml): every change adds a fragment to
# changelogs/fragments/; a release (VERSION= galaxy.yml's version) moves them into changelog.yaml.
changelog: venv
	$(VENV)/bin/antsibull-changelog lint
	@if [ -n "$(VERSION)" ]; then $(VENV)/bin/antsibull-changelog release --version $(VERSION); fi

# Parser fuzzing: 20,000 random mutated inputs per parse_* (make test runs 1,000, derandomized).
FUZZ_EXAMPLES ?= 20000
fuzz: venv
	LINERATE_FUZZ_PROFILE=fuzz LINERATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VPY) -m pytest -q tests/unit/test_parsers_fuzz.py

# Python: ruff check and ruff format --check (ruff.toml; docs/testing.md), mypy strict on parsers/ and
# switch/ (mypy.ini); YAML: yamllint and ansible-lint.
lint: venv
	$(VENV)/bin/ruff check plugins lab bench scripts tests
	$(VENV)/bin/ruff format --check plugins lab bench scripts tests
	$(VENV)/bin/mypy
	$(VENV)/bin/yamllint -s .
	$(VENV)/bin/ansible-lint -q

# ansible-test sanity on the collection as it ships (tests/sanity/run.py:
# a copy under .../ansible_collections/linerate/fabric; ansible-test's own
# per-test virtualenvs, pinned, from the configured package index).
# Ignores: tests/sanity/ignore-2.19.txt, one reason per line.
sanity: venv
	$(VPY) tests/sanity/run.py

# The release gates, slow, not in make test (tests/sanity/release_check.py; docs/collection.md,
# "Release check"): the README's "From the built collection" block run as written in a fresh venv
# outside the checkout (tests/release/), then the artifact, built once, under each supported
# ansible-core (2.19, 2.20, 2.21; a venv each under .ansible/release-check/, 2.20+ on Python 3.12):
# ansible-test sanity, galaxy-importer without a warning, ansible-lint production installed.
release-check: venv
	$(VPY) tests/sanity/release_check.py

# ansible-doc renders every module, filter and role without a warning.
docs-check: venv
	$(VPY) -m pytest -q tests/unit/test_plugin_docs.py

# report.html in headless Chromium (tests/browser): the heat map's titles laid out by the browser never
# overlap (its DOM boxes, checked in a screenshot), the page fetches nothing; with a lab report
# ($(INVENTORY)-output/reports/latest/report.html) that one too. Not in make test: chromium is large.
BROWSER_PACKAGES := chromium fonts-dejavu-core
.PHONY: test-browser
test-browser: venv
	@missing=$$(for p in $(BROWSER_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "test-browser: installing $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	html=$(INVENTORY)-output/reports/latest/report.html; \
	if [ -f $$html ]; then export LINERATE_REPORT_HTML=$(CURDIR)/$$html; fi; \
	$(VPY) -m pytest -q tests/browser

# Every integration test, the fault matrix included (tests marked `matrix`:
# one more fault of a class a core test already proves). Slowest tests listed.
test-integration: deps venv
	$(VPY) -m pytest -q --durations=15 tests/integration

lab-image: deps venv
	$(VPY) lab/labctl.py image

# The scenarios are independent (a container, an ephemeral directory and
# veth names of their own), so MOLECULE_JOBS of them run side by side; each
# one's output is printed whole when it ends (--output-sync).
MOLECULE_JOBS ?= 3
molecule:
	@$(MAKE) --no-print-directory -j$(MOLECULE_JOBS) --output-sync=target $(MOLECULE_TARGETS)

# lab-image: the node image and the lab's apt repository the scenarios mount
# (built once per make run, before any scenario starts). Each scenario is
# merged onto the shared base .config/molecule/config.yml, named here so that
# it does not depend on molecule finding the repository's root.
$(MOLECULE_TARGETS): molecule-%: lab-image
	@echo "molecule: $*"
	@cd roles/$* && $(CURDIR)/$(VENV)/bin/molecule --base-config $(CURDIR)/.config/molecule/config.yml test

test: deps venv
	$(VPY) -m pytest -q -n $(UNIT_JOBS) --dist loadfile tests/unit
	$(MAKE) --no-print-directory lint
	@# sanity beside the molecule scenarios: both wait on much besides the CPU
	$(MAKE) --no-print-directory -j$$(( $(MOLECULE_JOBS) + 1 )) --output-sync=target sanity $(MOLECULE_TARGETS)
	$(VPY) -m pytest -q --durations=15 -m "not matrix" tests/integration

bench: deps venv
	$(VPY) bench/fleet.py
	$(VPY) bench/run.py

# the fleet model alone (no lab): the verification plan and report code at 64..2,000 nodes x 8 rails
bench-fleet: venv
	$(VPY) bench/fleet.py

# Mutation testing (mutmut) of the intent validation, the switch drivers and change window, and
# the verification findings (counters, link health, cabling), each group
# with its unit tests; fails below MUTATION_MIN % killed. Slow: not in `make test`.
MUTATION_MIN ?= 90
MUTATION_GROUPS ?= intent switch counters links cabling
# e.g. MUTATION_ARGS="--sample 150 --seed 7": a random sample per group, its 95 % interval printed
MUTATION_ARGS ?=
mutation: venv
	$(VPY) tests/mutation.py --min $(MUTATION_MIN) $(MUTATION_ARGS) $(MUTATION_GROUPS)

clean: lab-down
	rm -rf $(VENV) reports .ansible inventory/lab-output inventory/lab-ib-output
