// Compiles every nearley grammar (compiler/**/*.ne) to a sibling *.generated.cjs, and copies the
// generated files next to the compiled JS in dist/ when dist/ exists. Run by `npm run build`.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";

const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
const mode = process.argv[2] ?? "compile";
for (const ne of walk("compiler").filter((f) => f.endsWith(".ne"))) {
  const out = ne.replace(/\.ne$/, ".generated.cjs");
  if (mode === "compile") {
    execFileSync(process.execPath, ["node_modules/nearley/bin/nearleyc.js", ne, "-o", out], { stdio: ["ignore", "ignore", "inherit"] });
  } else if (mode === "copy" && existsSync("dist")) {
    const dest = join("dist", out);
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(out, dest);
  }
}
