# syntax=docker/dockerfile:1
# The gateway as a container: a static (musl) build of `switchboard`, run
# as a non-root user in an image holding nothing else.
#
#   docker build -t switchboard .            (or: buildah bud -t switchboard .)
#   docker run -p 8080:8080 -v ./gateway:/etc/switchboard:ro switchboard
#
# The default command serves /etc/switchboard/config.json on 0.0.0.0:8080
# to callers holding a token of /etc/switchboard/tokens (deploy/README.md).

ARG RUST_VERSION=1.95

FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS build
# musl-tools: the C compiler the static target needs (ring, mimalloc); the
# image already holds the CA bundle copied into the runtime stage.
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools=1.2.3-1 \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --locked --profile dist --target x86_64-unknown-linux-musl -p switchboard \
    && install -D -m 0755 target/x86_64-unknown-linux-musl/dist/switchboard /out/usr/local/bin/switchboard \
    && install -d -m 1777 /out/tmp \
    && install -d -o 65532 -g 65532 -m 0700 /out/home/switchboard \
    && install -D -m 0644 /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ca-certificates.crt \
    && printf 'root:x:0:0::/:/sbin/nologin\nswitchboard:x:65532:65532::/home/switchboard:/sbin/nologin\n' > /out/etc/passwd \
    && printf 'root:x:0:\nswitchboard:x:65532:\n' > /out/etc/group

FROM scratch AS runtime
COPY --from=build /out/ /
ENV HOME=/home/switchboard \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    SWITCHBOARD_LOG_FORMAT=json
USER 65532:65532
EXPOSE 8080
# Liveness: the binary probes its own /healthz (the image has no shell or curl).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/switchboard", "health", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["--config", "/etc/switchboard/config.json", "serve", "--http", "0.0.0.0:8080", \
     "--auth", "token", "--tokens-file", "/etc/switchboard/tokens", \
     "--resource", "http://127.0.0.1:8080/mcp", "--drain", "20"]
