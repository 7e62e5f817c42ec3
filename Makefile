# Build the static binary and the FROM-scratch image (no base image is
# pulled). CI systems run the same two commands as `make image`.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE   ?= kvnode

.PHONY: build image test clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/kvnode ./cmd/kvnode

image: build
	docker build -f deploy/Dockerfile -t $(IMAGE):$(VERSION) -t $(IMAGE):latest .

test:
	go test -race ./...

clean:
	rm -rf bin
