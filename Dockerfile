# Multi-stage build: compile with the Rust toolchain, run on distroless (glibc, CA certificates,
# no shell, non-root user 65532).
FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
COPY benches ./benches
RUN cargo build --release --locked --bin kube-gc

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/kube-gc /usr/local/bin/kube-gc
USER 65532:65532
EXPOSE 10257
ENTRYPOINT ["/usr/local/bin/kube-gc"]
CMD ["run"]
