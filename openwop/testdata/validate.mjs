// Validates OpenWOP answers against the OpenWOP spec's JSON Schemas with
// ajv (draft 2020-12) and ajv-formats, the validator the spec's README
// names. openwop's tests (wire_test.go) write every answer the adapter
// gave them to a file and run this on it:
//
//	node validate.mjs <node package dir> <schema dir> <answers.json>
//
// <node package dir> holds ajv and ajv-formats (make clients installs them
// in mcpserver/testdata/client); <schema dir> the spec's *.schema.json;
// answers.json is [{"label", "schema", "body"}], schema one of the names
// below. It prints {"validated": n, "failures": [{"label", "schema",
// "errors"}]} and exits 0; it exits 2 when it cannot run at all.
import { createRequire } from "node:module";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";

const [pkgDir, schemaDir, answersFile] = process.argv.slice(2);
if (!answersFile) {
	console.error("usage: node validate.mjs <node package dir> <schema dir> <answers.json>");
	process.exit(2);
}
// ajv is CommonJS, installed beside the MCP clients: required from there.
const require = createRequire(join(resolve(pkgDir), "package.json"));
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;
const ajvVersion = require("ajv/package.json").version;

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
for (const f of readdirSync(schemaDir).filter((f) => f.endsWith(".schema.json")).sort()) {
	ajv.addSchema(JSON.parse(readFileSync(join(schemaDir, f), "utf8")));
}
const spec = (name) => `https://openwop.dev/spec/v1/${name}.schema.json`;
// The answers the spec gives no file of its own: list's array of entries,
// get's entry or null, delete's boolean (RFC 0004 §A), and engram's
// memoryRef issue (vendor).
const validators = {
	capabilities: ajv.getSchema(spec("capabilities")),
	"error-envelope": ajv.getSchema(spec("error-envelope")),
	"memory-entry": ajv.getSchema(spec("memory-entry")),
	"memory-list": ajv.compile({ type: "array", items: { $ref: spec("memory-entry") } }),
	"memory-entry-or-null": ajv.compile({ oneOf: [{ type: "null" }, { $ref: spec("memory-entry") }] }),
	"delete-result": ajv.compile({ type: "boolean" }),
	"memory-ref": ajv.compile({
		type: "object",
		required: ["memoryRef"],
		properties: { memoryRef: { type: "string", minLength: 1 } },
		additionalProperties: false,
	}),
};
for (const [name, v] of Object.entries(validators)) {
	if (!v) {
		console.error(`no schema ${name} in ${schemaDir}`);
		process.exit(2);
	}
}

const answers = JSON.parse(readFileSync(answersFile, "utf8"));
const failures = [];
for (const a of answers) {
	const v = validators[a.schema];
	if (!v) {
		failures.push({ label: a.label, schema: a.schema, errors: ["no such schema"] });
		continue;
	}
	if (!v(a.body)) {
		failures.push({
			label: a.label,
			schema: a.schema,
			errors: v.errors.map((e) => `${e.instancePath || "/"} ${e.message} (${e.schemaPath})`),
		});
	}
}
console.log(JSON.stringify({ ajv: ajvVersion, validated: answers.length, failures }));
