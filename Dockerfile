# syntax=docker/dockerfile:1
# The images the stages start from, as build arguments: the defaults come
# from Docker Hub. Without a registry, .ci/image-test builds the runtime
# stage on a local debootstrap base, with a binary built on the host in
# place of the build stage (buildah's --build-context build=DIR, DIR
# holding out/dumbodb): docs/operations.md, "Containers".
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# Build: cgo is required (Dolt's chunk store uses zstd through cgo).
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces Dolt's lock package with this copy (third_party/fslock).
COPY third_party ./third_party
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -ldflags="-s -w" -o /out/dumbodb ./cmd/dumbodb

FROM ${RUNTIME_IMAGE} AS runtime
RUN useradd --system --uid 10001 --home /data dumbodb && mkdir -p /data && chown dumbodb /data
COPY --from=build /out/dumbodb /usr/local/bin/dumbodb
USER dumbodb
VOLUME ["/data"]
EXPOSE 27017
# Settings come from DUMBODB_<FLAG> variables (docs/operations.md), which
# `docker run -e` overrides, from a mounted mongod-style YAML file that
# DUMBODB_CONFIG names (it wins over the variables), and from flags after
# the image's name. Listening on every address, so --auth: start the
# container with DUMBODB_ROOT_USERNAME and DUMBODB_ROOT_PASSWORD (or the
# official image's MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD)
# to create the first user, a root user of admin, or create it over
# 127.0.0.1 from the container's network (the localhost exception).
ENV DUMBODB_DATA_DIR=/data DUMBODB_BIND_IP_ALL=true DUMBODB_PORT=27017 DUMBODB_AUTH=true
# The healthcheck sends a real ping over the wire protocol, to the port the
# server listens on: the DUMBODB_CONFIG file's net.port, else DUMBODB_PORT.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["dumbodb", "ping"]
ENTRYPOINT ["dumbodb"]
