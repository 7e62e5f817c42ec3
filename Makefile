# Build the static binary and the FROM-scratch image (no base image is
# pulled). CI systems run the same two commands as `make image`.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE   ?= kvnode

.PHONY: build image test clean chaos chaos-compose chaos-doc

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/kvnode ./cmd/kvnode

image: build
	docker build -f deploy/Dockerfile -t $(IMAGE):$(VERSION) -t $(IMAGE):latest .

test:
	go test -race ./...

# Chaos runs (chaos/, build tag chaos): every scenario on a fresh
# three-process cluster on 127.0.0.0/8, CHAOS_RUNS times for CHAOS_DURATION
# each; every run is appended to docs/chaos-runs.jsonl and docs/chaos.md
# is regenerated from all of them. A failed run leaves its history and
# porcupine's HTML under chaos-results/. chaos-compose does the same on the
# docker-compose cluster (needs a Docker engine).
CHAOS_DURATION ?= 60s
CHAOS_RUNS     ?= 1
CHAOS_FLAGS     = -chaos.duration=$(CHAOS_DURATION) -chaos.runs=$(CHAOS_RUNS) \
                  -chaos.results=$(CURDIR)/chaos-results -chaos.runlog=$(CURDIR)/docs/chaos-runs.jsonl \
                  -chaos.doc=$(CURDIR)/docs/chaos.md

chaos:
	go test -tags chaos -run 'TestChaos$$' -count=1 -timeout 0 -v ./chaos -args $(CHAOS_FLAGS)

chaos-compose:
	go test -tags chaos -run 'TestChaos$$' -count=1 -timeout 0 -v ./chaos -args $(CHAOS_FLAGS) -chaos.backend=compose

chaos-doc:
	go test -tags chaos -run 'TestChaosDoc$$' -count=1 ./chaos -args \
		-chaos.runlog=$(CURDIR)/docs/chaos-runs.jsonl -chaos.doc=$(CURDIR)/docs/chaos.md

clean:
	rm -rf bin chaos-results
