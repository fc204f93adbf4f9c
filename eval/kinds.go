package eval

import (
	"fmt"
	"math/rand/v2"
)

// kind is a kind of error an agent meets in the session worlds (families b
// and c), printed the way the real tool prints it, with the command that
// meets it and the alternatives an agent may try for each step of its
// fix. Commands are written in their canonical shell form; a [Surface]
// renders them as the family's tool calls. {name} is an instance's value.
type kind struct {
	name string
	// trigger is the command that fails until the fix is done: running
	// it again without error resolves the problem.
	trigger string
	// message is the error as the agent reports it; stderr the tool's
	// whole output around it ("" is the message alone); exit its status.
	message, stderr string
	exit            int
	// steps are the steps of the fix, each the alternatives an agent may
	// try (at least four).
	steps [][]string
	// keys are the environment keys (by index in the family's keys) the
	// fix may depend on; -1 is none.
	keys []int
	// vars are the instance's values: each variable's pool for
	// acquisition and the disjoint one for deployment.
	vars []pool
}

// pool is a variable's values: train for acquisition, held for the
// held-out deployment instances.
type pool struct {
	name        string
	train, held []string
}

// draw picks a value of each variable of k.
func (k kind) draw(rng *rand.Rand, heldOut bool) map[string]string {
	out := map[string]string{}
	for _, p := range k.vars {
		from := p.train
		if heldOut {
			from = p.held
		}
		out[p.name] = from[rng.IntN(len(from))]
	}
	return out
}

func numbers(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// kinds are the errors of the session worlds: shell, Python, npm, Rust,
// pip, Go, make, pytest, docker, a bundler with bare versioned names, and
// a permission error inside a path.
var kinds = []kind{
	{
		name: "command not found", trigger: "{cmd} --version", message: "bash: {cmd}: command not found", exit: 127,
		steps: [][]string{{"apt-get install -y {cmd}", "brew install {cmd}", "apk add --no-cache {cmd}", "snap install {cmd}", "nix-env -i {cmd}"}},
		keys:  []int{0},
		vars: []pool{{"cmd", []string{"jq", "tree", "shellcheck", "cmake", "wget", "tmux", "rsync", "zstd", "socat", "unzip"},
			[]string{"htop", "pv", "lz4", "ncdu", "entr", "mtr"}}},
	},
	{
		name: "python module", trigger: "python -m app", exit: 1,
		message: "ModuleNotFoundError: No module named '{module}'",
		stderr: "Traceback (most recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\n" +
			"  File \"/srv/app/src/app/__main__.py\", line 3, in <module>\n    import {module}\nModuleNotFoundError: No module named '{module}'",
		steps: [][]string{{"pip install {module}", "pip install --user {module}", "python3 -m pip install --break-system-packages {module}",
			"conda install -y {module}", "poetry add {module}"}},
		keys: []int{1, -1},
		vars: []pool{{"module", []string{"requests", "toml", "attrs", "click", "rich", "httpx", "tqdm", "boto3", "jinja2", "redis"},
			[]string{"ujson", "orjson", "pendulum", "structlog", "tenacity", "pydantic"}}},
	},
	{
		name: "npm E404", trigger: "npm install", exit: 1,
		message: "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/@{scope}%2f{pkg} - Not found\n" +
			"npm ERR! 404  '@{scope}/{pkg}@{version}' is not in this registry.",
		steps: [][]string{
			{"cat <<'EOF' > .npmrc\n@{scope}:registry=https://npm.{scope}.dev/\nEOF", "npm config set registry https://registry.npmjs.org/",
				"npm login --scope=@{scope}", "npm cache clean --force"},
			{"npm install @{scope}/{pkg}@{version}", "npm ci", "npm install --legacy-peer-deps", "rm -rf node_modules package-lock.json"},
		},
		keys: []int{-1, 0},
		vars: []pool{
			{"scope", []string{"acme", "corp", "initech", "umbrella", "globex"}, []string{"hooli", "vandelay", "wonka"}},
			{"pkg", []string{"ui-kit", "auth", "logger", "config"}, []string{"http", "metrics", "forms"}},
			{"version", []string{"2.1.0", "1.4.2", "3.0.1"}, []string{"0.9.7", "4.2.0"}},
		},
	},
	{
		name: "rust unresolved import", trigger: "cargo build", exit: 101,
		message: "error[E0432]: unresolved import `{crate}`",
		stderr: "   Compiling app v0.1.0 (/srv/app)\nerror[E0432]: unresolved import `{crate}`\n --> src/main.rs:{line}:5\n" +
			"  |\n{line} | use {crate};\n  |     ^^^^^ use of undeclared crate or module `{crate}`\n\n" +
			"error: could not compile `app` (bin \"app\") due to 1 previous error",
		steps: [][]string{{"cargo add {crate}", "cargo update -p {crate}", "cargo fetch", "cargo install {crate}", "cargo clean"}},
		keys:  []int{-1, 1},
		vars: []pool{{"crate", []string{"serde_json", "tokio", "anyhow", "regex", "clap", "rand"}, []string{"thiserror", "rayon", "itertools", "chrono"}},
			{"line", numbers(2, 30), numbers(30, 60)}},
	},
	{
		name: "pip no matching version", trigger: "pip install -r requirements.txt", exit: 1,
		message: "ERROR: Could not find a version that satisfies the requirement {pkg}=={version} (from versions: none)\n" +
			"ERROR: No matching distribution found for {pkg}=={version}",
		steps: [][]string{{"pip install --index-url https://pypi.internal/simple {pkg}=={version}", "pip install --pre {pkg}=={version}",
			"pip install --upgrade pip", "pip cache purge", "pip install --no-deps {pkg}"}},
		keys: []int{1, -1},
		vars: []pool{{"pkg", []string{"flask", "django", "numpy", "pandas", "celery"}, []string{"fastapi", "sqlalchemy", "scipy"}},
			{"version", []string{"1.2", "2.0.3", "0.9", "3.1.4"}, []string{"5.0", "1.12.1"}}},
	},
	{
		name: "go package", trigger: "go build ./...", exit: 1,
		message: "main.go:{line}:2: cannot find package \"github.com/{org}/{repo}\" in any of:\n" +
			"\t/usr/local/go/src/github.com/{org}/{repo} (from $GOROOT)\n\t/root/go/src/github.com/{org}/{repo} (from $GOPATH)",
		steps: [][]string{{"go get github.com/{org}/{repo}", "go mod download", "go install github.com/{org}/{repo}@latest", "go mod vendor",
			"go clean -cache"}},
		keys: []int{-1, 1},
		vars: []pool{{"org", []string{"acme", "gorilla", "spf13", "sirupsen"}, []string{"labstack", "go-chi"}},
			{"repo", []string{"mux", "cobra", "logrus", "viper"}, []string{"echo", "render"}}, {"line", numbers(4, 20), numbers(20, 40)}},
	},
	{
		name: "go.mod updates", trigger: "go test ./...", exit: 1,
		message: "go: updates to go.mod needed; to update it:\n\tgo mod tidy",
		steps:   [][]string{{"go mod tidy", "go mod download", "go get -u ./...", "go clean -modcache", "go work sync"}},
		keys:    []int{1, -1},
	},
	{
		name: "make target", trigger: "make {target}", exit: 2,
		message: "make: *** [Makefile:{line}: {target}] Error 2",
		stderr:  "cc -O2 -c src/main.c -o build/main.o\nsrc/main.c:1:10: fatal error: config.h: No such file or directory\nmake: *** [Makefile:{line}: {target}] Error 2",
		steps: [][]string{{"make clean", "rm -rf build", "make -B {target}", "touch Makefile", "make distclean"},
			{"./configure", "autoreconf -fi", "cmake -S . -B build", "make deps"}},
		keys: []int{0, -1},
		vars: []pool{{"target", []string{"build", "dist", "install", "lint"}, []string{"package", "release", "docs"}},
			{"line", numbers(10, 40), numbers(40, 80)}},
	},
	{
		name: "pytest failure", trigger: "pytest -q", exit: 1,
		message: "FAILED tests/test_{mod}.py::{test} - AssertionError",
		stderr:  "F.....\n=========================== short test summary info ============================\nFAILED tests/test_{mod}.py::{test} - AssertionError\n1 failed, 5 passed in 0.42s",
		steps: [][]string{{"pip install -e .", "rm -rf .pytest_cache", "find . -name __pycache__ -exec rm -rf {} +", "pytest --cache-clear",
			"git stash"}},
		keys: []int{1, -1},
		vars: []pool{{"mod", []string{"config", "api", "models", "utils", "cli"}, []string{"auth", "db", "cache"}},
			{"test", []string{"test_load", "test_parse", "test_defaults", "test_roundtrip"}, []string{"test_merge", "test_env"}}},
	},
	{
		name: "docker pull denied", trigger: "docker pull {image}:{tag}", exit: 1,
		message: "Error response from daemon: pull access denied for {image}, repository does not exist or may require 'docker login': " +
			"denied: requested access to the resource is denied",
		steps: [][]string{{"docker login registry.internal", "docker logout", "docker system prune -f", "docker context use default"},
			{"docker pull registry.internal/{image}:{tag}", "docker build -t {image}:{tag} .", "docker pull {image}:latest", "docker compose pull"}},
		keys: []int{0, -1},
		vars: []pool{{"image", []string{"billing-api", "search-worker", "auth-svc", "mailer"}, []string{"ledger-db", "gateway", "catalog-api"}},
			{"tag", []string{"1.4", "2.0", "latest-rc"}, []string{"3.1", "edge"}}},
	},
	{
		name: "bundler", trigger: "pkg build", exit: 3,
		message: "E{code}: bundler failed on {unit} (line {line})",
		steps:   [][]string{{"pkg install {unit}", "pkg fetch {unit}", "pkg rebuild {unit}", "pkg pin {unit}", "pkg clean"}},
		keys:    []int{1, -1},
		vars: []pool{{"code", numbers(8000, 8999), numbers(9000, 9999)},
			{"unit", []string{"tokio-28", "serde-14", "hyper-3", "axum-7", "tonic-11"}, []string{"mio-9", "bytes-21", "tower-5"}},
			{"line", numbers(20, 200), numbers(200, 400)}},
	},
	{
		name: "permission denied", trigger: "./scripts/bootstrap.sh", exit: 1,
		message: "error: could not open '{dir}/build/cache.db': Permission denied",
		steps: [][]string{{"sudo chown -R $(id -u) {dir}/build", "chmod -R u+w {dir}/build", "rm -f {dir}/build/cache.db",
			"sudo rm -rf {dir}/build"}},
		keys: []int{0},
		vars: []pool{{"dir", []string{"/srv/billing", "/opt/search", "/home/ci/auth", "/var/lib/mailer"},
			[]string{"/srv/ledger", "/opt/gateway", "/home/ci/catalog"}}},
	},
}
