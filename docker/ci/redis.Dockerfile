# CI only: Debian's redis-server (in the CI base image), run as the official image runs it.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
ENTRYPOINT ["redis-server"]
