// Decode Draco fragments with Neuroglancer's own decoder (the WebAssembly module bundled in
// the `neuroglancer` Python package), as its multi-resolution mesh source does.
// Usage: node ng_draco_decode.mjs CLIENT_DIR BITS FILE PARTITION [FILE PARTITION ...]
// Prints one JSON line per fragment: {code, indices, positions, offsets}.
import fs from "fs";
import path from "path";

const [clientDir, bits, ...rest] = process.argv.slice(2);
let instance = null;
let received = null;
let partitions = 1;
const env = {
  emscripten_notify_memory_growth: () => {},
  neuroglancer_draco_receive_decoded_mesh: (faces, vertices, indices, positions, offsets) => {
    const memory = instance.exports.memory.buffer;
    received = {
      indices: Array.from(new Uint32Array(memory, indices, faces * 3)),
      positions: Array.from(new Uint32Array(memory, positions, vertices * 3)),
      offsets: Array.from(new Uint32Array(memory, offsets, partitions + 1)),
    };
  },
  proc_exit: (code) => {
    throw new Error(`proc_exit ${code}`);
  },
};
let module = null;
for (const name of fs.readdirSync(clientDir).filter((n) => n.endsWith(".wasm"))) {
  const candidate = await WebAssembly.compile(fs.readFileSync(path.join(clientDir, name)));
  const names = WebAssembly.Module.exports(candidate).map((e) => e.name);
  if (names.includes("neuroglancer_draco_decode")) module = candidate;
}
if (module === null) throw new Error(`no Draco decoder in ${clientDir}`);
instance = await WebAssembly.instantiate(module, { env, wasi_snapshot_preview1: env });
instance.exports._initialize();
for (let i = 0; i < rest.length; i += 2) {
  const input = fs.readFileSync(rest[i]);
  const partition = rest[i + 1] === "1";
  partitions = partition ? 8 : 1;
  received = null;
  const at = instance.exports.malloc(input.length);
  new Uint8Array(instance.exports.memory.buffer).set(input, at);
  const code = instance.exports.neuroglancer_draco_decode(at, input.length, partition, Number(bits), true);
  console.log(JSON.stringify({ code, ...(received ?? {}) }));
}
