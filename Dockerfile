# The controller image: `docker build -t jobcore:0.1.0 .`, the version in pyproject.toml and in
# the manifests' image tag (docs/deployment.md).
# Two stages: the wheel is built with the build tools, the runtime gets only the wheel.
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
# No shell login, no home: the Deployment runs it as this uid with a read-only root.
USER 65532:65532
# Health probes; /metrics listens on loopback unless --metrics-bind-address says otherwise.
EXPOSE 8081
ENTRYPOINT ["jobcore"]
CMD ["run", "--leader-elect"]
