package signature_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/signature"
)

func TestSignature(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, msg, want string }{
		{"ld path", "ld: cache mismatch in /tmp/build-123/obj.o", "ld: cache mismatch in <path>"},
		{"ld other path", "ld: cache mismatch in /home/ci/work/proj/out/main.o", "ld: cache mismatch in <path>"},
		{"ld relative", "ld: cache mismatch in ./build/x.o", "ld: cache mismatch in <path>"},
		{"ld cannot find", "/usr/bin/ld: cannot find -lssl: No such file or directory", "<path>: cannot find -lssl: no such file or directory"},
		{"go undefined", "./main.go:12:5: undefined: fooBar", "<path>: undefined: foobar"},
		{"go nested", "internal/store/query.go:281:14: cannot use x (variable of type int) as string value", "<path>: cannot use x (variable of type int) as string value"},
		{"go panic", "panic: runtime error: index out of range [5] with length 3", "panic: runtime error: index out of range [<n>] with length <n>"},
		{"go nil map goroutine", "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.main()", "panic: assignment to entry in nil map"},
		{"rust", "error[E0308]: mismatched types\n --> src/main.rs:4:18\n  |", "error[e0308]: mismatched types"},
		{"rust borrow", "error[E0502]: cannot borrow `v` as mutable because it is also borrowed as immutable", "error[e0502]: cannot borrow <q> as mutable because it is also borrowed as immutable"},
		{"npm", "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree", "code eresolve"},
		{"npm missing", "npm ERR! Cannot find module 'left-pad'\nRequire stack:\n- /app/index.js", "cannot find module <q>"},
		{"python", "Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 42, in <module>\n    main()\n  File \"/srv/app/main.py\", line 7, in main\n    int(x)\nValueError: invalid literal for int() with base 10: 'abc'", "valueerror: invalid literal for int() with base <n>: <q>"},
		{"python module", "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nModuleNotFoundError: No module named 'requests'", "modulenotfounderror: no module named <q>"},
		{"python syntax", "  File \"/srv/app/util.py\", line 12\nSyntaxError: invalid syntax", "syntaxerror: invalid syntax"},
		{"hex id", "container 3f9a2b1c7d8e not found", "container <hex> not found"},
		{"0x address", "segfault at 0x7ffd5e8c accessing memory", "segfault at <hex> accessing memory"},
		{"uuid", "record 0192f7c3-5a1b-7c2d-9e4f-0a1b2c3d4e5f is locked", "record <hex> is locked"},
		{"line col words", "parse error at line 17, column 4: unexpected token", "parse error at <n>: unexpected token"},
		{"windows path", `cannot open C:\Users\bob\proj\out.exe: access denied`, "cannot open <path>: access denied"},
		{"url", "GET https://registry.npmjs.org/left-pad failed with 404", "get <url> failed with <n>"},
		{"port", "dial tcp 127.0.0.1:5432: connect: connection refused", "dial tcp <n>: connect: connection refused"},
		{"words kept", "permission denied", "permission denied"},
		{"empty", "   \n  ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, signature.Of(tc.msg), tc.msg)
		})
	}
}

// Occurrences of one problem share a signature; different problems do not.
func TestSignatureGroups(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"ld: cache mismatch in /tmp/build-123/obj.o", "ld: cache mismatch in /var/tmp/b/x.o", "LD: cache mismatch in  ./obj/y.o."},
		{"main.go:3:1: undefined: x", "cmd/app/run.go:88:12: undefined: x"},
		{`error: could not compile "engram" (lib) due to 2 previous errors`, `error: could not compile "other" (lib) due to 17 previous errors`},
	}
	for _, group := range same {
		for _, m := range group[1:] {
			require.Equal(t, signature.Of(group[0]), signature.Of(m), m)
		}
	}
	require.NotEqual(t, signature.Of("ld: cache mismatch in /a/b.o"), signature.Of("ld: symbol not found in /a/b.o"))
}

func TestBare(t *testing.T) {
	t.Parallel()
	require.Equal(t, "npm: checksum failure in (package )", signature.Bare(signature.Of("npm: checksum failure in /srv/a/obj.o (package 'liba')")))
	require.Equal(t, "get failed with", signature.Bare(signature.Of("GET https://x.org/a failed with 404")))
	require.Equal(t, "a path is <not> a placeholder", signature.Bare("a path is <not> a placeholder"))
}
