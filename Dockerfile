# The controller image: `docker build -t jobcore:0.1.0 .`, the version in pyproject.toml and in
# the manifests' image tag (docs/deployment.md).
# Three stages: the launch agent is built from Debian's Go toolchain as scripts/agent.sh builds
# it (static, Go's standard library only), the wheel with the build tools; the runtime gets the
# agent and the wheel.
FROM python:3.11-slim AS agent
COPY agent /src/agent
COPY scripts/agent.sh scripts/apt.sh /src/scripts/
RUN cp "$(bash /src/scripts/agent.sh | tail -n 1)" /jobcore-agent

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY jobcore ./jobcore
COPY jobkinds ./jobkinds
COPY controllers ./controllers
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
# The agent the controller's jobs copy into their pods (`jobcore run --agent-path`'s default).
COPY --from=agent /jobcore-agent /usr/local/bin/jobcore-agent
# No shell login, no home: the Deployment runs it as this uid with a read-only root.
USER 65532:65532
# Health probes; /metrics listens on loopback unless --metrics-bind-address says otherwise.
EXPOSE 8081
ENTRYPOINT ["jobcore"]
CMD ["run", "--leader-elect"]
