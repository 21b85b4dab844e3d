#!/usr/bin/env bash
# Installs everything qmlx needs to build and test on a fresh Debian 12 machine. Idempotent:
# packages already present are not reinstalled, npm packages come from the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev libxxhash-dev libcli11-dev libicu-dev
  libssl-dev openssl redis-server redis-tools nginx
  python3 python3-numpy python3-jinja2
  # Image input (src/image): the decoders' libraries; PIL for the tests that compare with it.
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev python3-pil
  # The JSON Schema Test Suite, for the grammar engine's conformance tests.
  json-schema-test-suite
  curl prometheus
  clang-14 libclang-rt-14-dev
  # The Vulkan backend: headers and glslc to build; lavapipe and the validation layer to test.
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers
  # The status page's browser test: headless chromium, driven by npm's puppeteer-core.
  chromium
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from outside Debian (with its own npm); install Debian's only when absent.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Test-only JavaScript tools: tokenizer oracles and the official API clients.
if [[ ! -d tests/node/node_modules ]] || [[ tests/node/package-lock.json -nt tests/node/node_modules ]]; then
  echo "setup: installing npm test tools"
  (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
  touch tests/node/node_modules
fi

# The real coding agents the agent e2e tests and bench/agent/real_clients.sh drive (~1.3 GB),
# pinned to exact releases. npm runs no install scripts here; each client runs without its own.
if [[ ! -d tests/agents/node_modules ]] || [[ tests/agents/package-lock.json -nt tests/agents/node_modules ]]; then
  echo "setup: installing the pinned coding agents"
  (cd tests/agents && npm ci --no-audit --no-fund --loglevel=error)
  touch tests/agents/node_modules
fi
