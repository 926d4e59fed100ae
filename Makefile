# DumboDB build and test entry points. `make test` is the one command that
# runs every test on a fresh machine (it installs mongosh and the Node
# driver from npm and Chromium from Debian's packages first).

GO        ?= go
MONGOSH_VERSION := 2.12.0
NODE_DRIVER_VERSION := 7.9.0
STATICCHECK_VERSION := v0.8.2
TOOLS     := $(CURDIR)/.tools
MONGOSH   := $(TOOLS)/node_modules/.bin/mongosh
NODE_DRIVER := $(TOOLS)/node-driver-$(NODE_DRIVER_VERSION)
export DUMBODB_MONGOSH := $(MONGOSH)
export DUMBODB_NODE_DRIVER := $(NODE_DRIVER)/node_modules/mongodb
# A directory per version, so that a new pin installs afresh.
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
# SeaweedFS, the S3-compatible store the s3:// remote tests run against
# (internal/seaweed), built from the Go module proxy.
WEED_VERSION := v0.0.0-20261109003541-7506e5f91cd6
WEED := $(TOOLS)/weed-$(WEED_VERSION)/weed
export DUMBODB_WEED := $(WEED)
# Debian's Chromium, the headless browser the web console's test drives.
CHROMIUM  := /usr/bin/chromium
export DUMBODB_CHROMIUM := $(CHROMIUM)
# What tests keep (go test -artifacts, t.ArtifactDir), emptied at each
# run: the console's browser test's screenshots of its pages, in a
# directory of the test's own under $(TEST_OUTPUT)/_artifacts/ (`find
# $(TEST_OUTPUT) -name log.png` finds it; docs/console.md#screenshots).
# Without -artifacts go test deletes them when the test ends.
TEST_OUTPUT := $(TOOLS)/test-output
TEST_ARTIFACTS = -artifacts -outputdir $(TEST_OUTPUT)

.PHONY: build run test test-short lint-deps vet staticcheck tools weed fuzz clean spec

build:
	$(GO) build -o bin/dumbodb ./cmd/dumbodb

run:
	$(GO) run ./cmd/dumbodb

# Every test: vet, staticcheck, the import rules, unit tests and
# end-to-end tests (the official Go driver and mongosh against real
# servers), under the race detector, then a short fuzz pass and the driver's unified spec cases of
# SPEC_TEST against the known failures (tools/spec-known-failures.txt). -count=1: the process and crash tests
# build the server binary themselves, which go test's cache cannot see.
# The container image's test (image-test, below) runs beside go test:
# it mostly waits for debootstrap's downloads.
test: tools vet staticcheck
	@set -e; rm -rf $(TEST_OUTPUT); mkdir -p $(TEST_OUTPUT); \
	.ci/image-test > $(TOOLS)/image-test.out 2>&1 & image=$$!; \
	$(GO) test -race -count=1 -timeout 25m $(TEST_ARTIFACTS) ./... || { kill $$image 2>/dev/null; exit 1; }; \
	wait $$image || { cat $(TOOLS)/image-test.out; echo "image-test failed"; exit 1; }; tail -1 $(TOOLS)/image-test.out
	$(MAKE) fuzz FUZZTIME=$(TEST_FUZZTIME)
	$(MAKE) spec SPEC='$(SPEC_TEST)' SPEC_EXPECT=tools/spec-known-failures.txt

test-short: vet
	rm -rf $(TEST_OUTPUT); mkdir -p $(TEST_OUTPUT)
	$(GO) test -short -timeout 10m $(TEST_ARTIFACTS) ./...

lint-deps:
	$(GO) test -run TestImportDirection -count=1 .

vet:
	$(GO) vet ./...

# staticcheck over every package, and no finding passes: one that is
# right as the code stands gets a //lint:ignore with its reason there.
# The pinned version is built from the Go module proxy into .tools/.
staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

tools: $(MONGOSH) $(NODE_DRIVER) $(WEED) $(CHROMIUM)

# Chromium comes from Debian's packages (root: apt-get).
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	test -x $@ || { echo "apt-get did not install chromium"; exit 1; }

# go install refuses SeaweedFS's replace directives, so its module is
# downloaded and built in a copy as the main module (about 4 minutes on 2
# cores, once); .tools/weed points at it for tests run without make.
weed: $(WEED)
$(WEED):
	mkdir -p $(TOOLS)
	set -e; src=$$(cd $(TOOLS) && GOFLAGS= $(GO) mod download -json github.com/seaweedfs/seaweedfs@$(WEED_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	test -n "$$src"; rm -rf $(TOOLS)/weed-src; cp -r "$$src" $(TOOLS)/weed-src; chmod -R u+w $(TOOLS)/weed-src; \
	(cd $(TOOLS)/weed-src && $(GO) build -o $@ ./weed); rm -rf $(TOOLS)/weed-src
	ln -sf $(WEED) $(TOOLS)/weed

# npm can end with status 0 and no mongosh when a dependency's install
# script fails on a transient error (seen: ssh2's install.js not found), so
# the binary is checked for, the install tried once more, and make stops
# if it is still missing rather than running the tests without it.
$(MONGOSH):
	mkdir -p $(TOOLS)
	npm install --prefix $(TOOLS) --no-audit --no-fund --loglevel=error mongosh@$(MONGOSH_VERSION); \
	test -x $@ || { echo "mongosh missing after npm install; once more"; rm -rf $(TOOLS)/node_modules; \
	  npm install --prefix $(TOOLS) --no-audit --no-fund --loglevel=error mongosh@$(MONGOSH_VERSION); }; \
	test -x $@ || { echo "npm did not install mongosh ($@)"; exit 1; }

# The Node driver, for the tests that use it as applications do.
$(NODE_DRIVER):
	mkdir -p $(NODE_DRIVER)
	npm install --prefix $(NODE_DRIVER) --no-audit --no-fund --loglevel=error mongodb@$(NODE_DRIVER_VERSION)
	test -f $(NODE_DRIVER)/node_modules/mongodb/package.json || { echo "npm did not install the Node driver"; exit 1; }

# Every fuzz target of every package, FUZZTIME each: go test -fuzz takes
# one target per run, so the targets are listed and run in turn. `make
# test` runs them for TEST_FUZZTIME. A timed run can end with Go's
# spurious "context deadline exceeded" and no failing input on a loaded
# machine (a count, -fuzztime Nx, can hang instead), so such a run is
# repeated once; a real crasher fails at once. Their seed corpora (f.Add and
# testdata/fuzz) also run as plain tests. A crasher is written to the
# package's testdata/fuzz/<target>/: fix it and keep the file.
FUZZTIME      ?= 10s
TEST_FUZZTIME ?= 4s
fuzz:
	@set -e; mkdir -p $(TOOLS); grep -r --include='*_test.go' --exclude-dir=.tools --exclude-dir=.git -o '^func Fuzz[A-Za-z0-9_]*' . | sed 's|:func | |' | \
	while read file target; do \
		pkg=$$(dirname $$file); \
		echo "fuzz: $$pkg $$target for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg > $(TOOLS)/fuzz.out 2>&1 || \
		{ cat $(TOOLS)/fuzz.out; grep -q 'Failing input written' $(TOOLS)/fuzz.out && exit 1; \
		  echo "fuzz: $$target stopped without a failing input (Go's timed-run artefact); once more"; \
		  $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg > $(TOOLS)/fuzz.out 2>&1 || { cat $(TOOLS)/fuzz.out; exit 1; }; }; \
		tail -1 $(TOOLS)/fuzz.out; \
	done

clean:
	rm -rf bin

# The drivers' unified specification tests against a fresh server:
# cmd/dumbospec builds the Go driver's runner, pinned by tools/go.mod, from
# the Go module proxy into .tools/ (once, a few minutes), starts bin/dumbodb
# with --enableTestCommands on a free port and an empty data directory, and
# prints a line per spec folder and 'N passed, N failed, N skipped'. SPEC
# is a regular expression over the folders: `make spec SPEC=.` runs all
# of them (dumbospec -h lists the timeouts).
# SPEC_EXPECT, when set, names the known failures: any other failing case
# fails the run. `make test` runs SPEC_TEST that way.
SPEC ?= ^crud/unified$$
SPEC_EXPECT ?=
SPEC_TEST = ^(crud/unified|change-streams|collection-management|index-management|sessions|retryable-writes/unified|transactions/unified|run-command|unified-test-format/valid-pass|versioned-api|command-monitoring(/logging)?|gridfs)$$
spec: build
	$(GO) run ./cmd/dumbospec -bin bin/dumbodb -cache $(TOOLS)/driver-spec -run '$(SPEC)' $(if $(SPEC_EXPECT),-expect $(SPEC_EXPECT))

# The container image: .ci/image-test builds the Dockerfile's runtime
# stage with buildah on a local debootstrap base (no registry, no Docker
# engine; root on Debian) and runs it to check the user, the /data
# volume, the healthcheck and logins (docs/operations.md, "Containers").
.PHONY: image-test
image-test:
	.ci/image-test
