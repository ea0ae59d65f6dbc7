/**
 * @fileoverview Real predicates for the two domains of seed 003 §3.3.1 (Tables 1 and 2): a shell
 * tool (`Terminal.Execute`, args `{ command }`) and an email tool (`Gmail.SendEmail`, args
 * `{ to, cc, bcc, subject, body }`, ToolEmu's shape). They are what examples/rules/*.rules use, and
 * what the enforcer tests (tests/compiler/rules.test.ts and tests/agents/rules.test.ts) run end to end.
 *
 * Shell predicates do not look for substrings. `parseShell` is a small shell tokenizer: quotes
 * ('...', "...", $'...'), backslashes, the operators `;` `&&` `||` `|` `&` and newlines, redirections,
 * `$(...)`, backticks and `<(...)` (parsed recursively), and then each simple command is unwrapped
 * (`sudo`, `env`, `nohup`, `timeout`, `xargs`, `sh -c '...'`, `eval`, `ssh host '...'`) before its
 * program and arguments are judged. So `echo "rm -rf /"` is harmless and `FOO=1 sudo -u root
 * /bin/rm -r -f -- /` is not. Shell is not fully parseable statically (variables, aliases,
 * functions): these predicates judge what is written, and err towards "dangerous" when a word is
 * opaque (e.g. `rm -rf $DIR`).
 *
 * Email predicates: receivers are compared by domain with the user's (subdomains count as internal;
 * look-alikes such as corp.com.evil.net do not), and content is scanned for Luhn-checked card
 * numbers with a known issuer prefix, SSNs with valid area/group/serial, passwords and API keys.
 */
import type { AgentContext, Predicate, RuleState, ToolCall } from "./rules.js";

// ───────────────────────────── shell: tokenizer ─────────────────────────────

/** A simple command: its words after quote removal, its redirections, and nested scripts. */
export interface SimpleCommand {
  words: string[];
  redirects: { op: string; target: string }[];
  /** Scripts run by `$(...)`, backticks or `<(...)` inside this command's words. */
  substitutions: ShellScript[];
}

/** A script: pipelines (commands joined by `|`), separated by `;`, `&&`, `||`, `&` or newlines. */
export interface ShellScript {
  pipelines: SimpleCommand[][];
}

/** The deepest `$(...)` / `sh -c` nesting analysed; deeper scripts are treated as opaque and dangerous. */
export const MAX_SHELL_DEPTH = 8;

const REDIRECT = /^(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<|&>>|&>)/;

/** Tokenizes and splits a shell command line. Never throws: an unterminated quote runs to the end. */
export function parseShell(src: string, depth = 0): ShellScript {
  const script: ShellScript = { pipelines: [] };
  let pipeline: SimpleCommand[] = [];
  let cmd: SimpleCommand = { words: [], redirects: [], substitutions: [] };
  let word: string | null = null; // null: no word started (so "" is a real, empty word)
  let pendingRedirect: string | null = null;
  const heredocs: { delim: string; strip: boolean }[] = [];

  const endWord = () => {
    if (word === null) return;
    if (pendingRedirect !== null) {
      cmd.redirects.push({ op: pendingRedirect, target: word });
      if (pendingRedirect.startsWith("<<") && pendingRedirect !== "<<<") heredocs.push({ delim: word, strip: pendingRedirect === "<<-" });
      pendingRedirect = null;
    } else cmd.words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (cmd.words.length || cmd.redirects.length || cmd.substitutions.length) pipeline.push(cmd);
    cmd = { words: [], redirects: [], substitutions: [] };
  };
  const endPipeline = () => {
    endCommand();
    if (pipeline.length) script.pipelines.push(pipeline);
    pipeline = [];
  };
  const nested = (body: string) => {
    cmd.substitutions.push(depth < MAX_SHELL_DEPTH ? parseShell(body, depth + 1) : OPAQUE_SCRIPT);
  };

  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i]!;
    if (c === "\\") {
      if (src[i + 1] === "\n") { i += 2; continue; } // line continuation
      word = (word ?? "") + (src[i + 1] ?? "");
      i += 2;
      continue;
    }
    if (c === "'") {
      const j = src.indexOf("'", i + 1);
      const end = j < 0 ? n : j;
      word = (word ?? "") + src.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (c === "$" && src[i + 1] === "'") {
      const [text, next] = ansiC(src, i + 2);
      word = (word ?? "") + text;
      i = next;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let text = "";
      while (j < n && src[j] !== '"') {
        if (src[j] === "\\" && j + 1 < n && '"\\$`\n'.includes(src[j + 1]!)) { if (src[j + 1] !== "\n") text += src[j + 1]; j += 2; continue; }
        if (src[j] === "$" && src[j + 1] === "(") { const e = matchParen(src, j + 1); nested(src.slice(j + 2, e)); text += src.slice(j, e + 1); j = e + 1; continue; }
        if (src[j] === "`") { const e = src.indexOf("`", j + 1); const end = e < 0 ? n : e; nested(src.slice(j + 1, end)); text += src.slice(j, end + 1); j = end + 1; continue; }
        text += src[j];
        j++;
      }
      word = (word ?? "") + text;
      i = j + 1;
      continue;
    }
    if (c === "$" && src[i + 1] === "(") {
      const e = matchParen(src, i + 1);
      nested(src.slice(i + 2, e));
      word = (word ?? "") + src.slice(i, e + 1);
      i = e + 1;
      continue;
    }
    if (c === "`") {
      const e = src.indexOf("`", i + 1);
      const end = e < 0 ? n : e;
      nested(src.slice(i + 1, end));
      word = (word ?? "") + src.slice(i, end + 1);
      i = end + 1;
      continue;
    }
    if ((c === "<" || c === ">") && src[i + 1] === "(") { // process substitution
      const e = matchParen(src, i + 1);
      nested(src.slice(i + 2, e));
      endWord();
      word = src.slice(i, e + 1);
      endWord();
      i = e + 1;
      continue;
    }
    if (c === "#" && word === null) { // a comment starts only at a word boundary
      const e = src.indexOf("\n", i);
      i = e < 0 ? n : e;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") { endWord(); i++; continue; }
    if (c === "\n") endWord(); // a here-document's delimiter may be the last word of the line
    if (c === "\n" && heredocs.length) { // skip here-document bodies: they are data, not commands
      endPipeline();
      i++;
      for (const h of heredocs.splice(0)) {
        for (;;) {
          const e = src.indexOf("\n", i);
          const line = src.slice(i, e < 0 ? n : e);
          i = e < 0 ? n : e + 1;
          if ((h.strip ? line.replace(/^\t+/, "") : line) === h.delim || e < 0) break;
        }
      }
      continue;
    }
    if (c === "\n" || c === ";") { endPipeline(); i++; continue; }
    if (c === "&" && src[i + 1] === "&") { endPipeline(); i += 2; continue; }
    if (c === "|" && src[i + 1] === "|") { endPipeline(); i += 2; continue; }
    if (c === "|") { endCommand(); i += src[i + 1] === "&" ? 2 : 1; continue; }
    if (c === "(" || c === ")") { endPipeline(); i++; continue; } // subshells: their commands are judged like any other
    // Redirections: `2>` takes the fd from a word of digits just before the operator.
    const m = c === "<" || c === ">" || (c === "&" && src[i + 1] === ">") ? REDIRECT.exec(src.slice(i, i + 3)) : null;
    if (m) {
      const fd = word !== null && /^\d+$/.test(word) ? word : "";
      if (fd) word = null; else endWord();
      const op = fd + m[0];
      i += m[0].length;
      if (op.endsWith("&") && /^[\d-]/.test(src[i] ?? "")) { // 2>&1, >&-: a descriptor, not a file
        let j = i;
        while (j < n && /[\d-]/.test(src[j]!)) j++;
        cmd.redirects.push({ op, target: src.slice(i, j) });
        i = j;
      } else pendingRedirect = op;
      continue;
    }
    if (c === "&") { endPipeline(); i++; continue; }
    word = (word ?? "") + c;
    i++;
  }
  endPipeline();
  return script;
}

/** A script nobody could read (nested too deep): judged as running an unknown program. */
const OPAQUE_SCRIPT: ShellScript = { pipelines: [[{ words: ["$(...)"], redirects: [], substitutions: [] }]] };

/** The index of the ')' matching the '(' at `open`, honouring quotes; the end of input if none. */
function matchParen(src: string, open: number): number {
  let d = 0;
  for (let i = open; i < src.length; i++) {
    const c = src[i]!;
    if (c === "\\") { i++; continue; }
    if (c === "'") { const j = src.indexOf("'", i + 1); if (j < 0) return src.length; i = j; continue; }
    if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      i = j;
      continue;
    }
    if (c === "(") d++;
    else if (c === ")" && --d === 0) return i;
  }
  return src.length;
}

/** Bash's $'...' quoting: the escapes an obfuscated command would use (\xHH, \NNN, \uHHHH, \n...). */
function ansiC(src: string, start: number): [string, number] {
  let out = "";
  let i = start;
  while (i < src.length && src[i] !== "'") {
    if (src[i] !== "\\") { out += src[i]; i++; continue; }
    const e = src[i + 1] ?? "";
    let m: RegExpExecArray | null;
    if (e === "x" && (m = /^[0-9a-fA-F]{1,2}/.exec(src.slice(i + 2)))) { out += String.fromCharCode(parseInt(m[0], 16)); i += 2 + m[0].length; continue; }
    if ((e === "u" || e === "U") && (m = /^[0-9a-fA-F]{1,8}/.exec(src.slice(i + 2, i + 2 + (e === "u" ? 4 : 8))))) {
      const cp = parseInt(m[0], 16);
      out += cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
      i += 2 + m[0].length;
      continue;
    }
    if ((m = /^[0-7]{1,3}/.exec(src.slice(i + 1)))) { out += String.fromCharCode(parseInt(m[0], 8) & 0xff); i += 1 + m[0].length; continue; }
    const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", v: "\v", "\\": "\\", "'": "'", '"': '"', "?": "?" };
    out += simple[e] ?? "\\" + e;
    i += 2;
  }
  return [out, i + 1];
}

// ───────────────────────────── shell: commands ─────────────────────────────

/** A simple command after unwrapping: the program (basename) and its arguments. */
export interface Invocation {
  program: string;
  args: string[];
  redirects: { op: string; target: string }[];
  /** The programs this one is piped into, for `curl ... | sh`. */
  pipedInto: string[];
}

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "fish", "busybox sh"]);
const KEYWORDS = new Set(["if", "then", "elif", "else", "fi", "do", "done", "while", "until", "for", "!", "{", "}", "time", "case", "esac"]);

/** Options of wrapper programs that take a separate argument. */
const WRAPPER_ARG_OPTS: Record<string, Set<string>> = {
  sudo: new Set(["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"]),
  doas: new Set(["-u", "-C"]),
  env: new Set(["-u", "-C", "-S", "--unset", "--chdir"]),
  nice: new Set(["-n", "--adjustment"]),
  ionice: new Set(["-c", "-n", "-p", "-P", "-u"]),
  timeout: new Set(["-s", "-k", "--signal", "--kill-after"]),
  stdbuf: new Set(["-i", "-o", "-e"]),
  xargs: new Set(["-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s", "--delimiter", "--max-args", "--max-procs", "--replace", "--arg-file"]),
  nohup: new Set(), command: new Set(), exec: new Set(["-a"]), builtin: new Set(), time: new Set(["-o", "-f"]),
  chrt: new Set(["-p"]), taskset: new Set(["-p"]), watch: new Set(["-n", "-d"]), strace: new Set(["-o", "-e", "-p", "-s"]),
  unbuffer: new Set(), caffeinate: new Set(["-t", "-w"]), flock: new Set(["-w", "-E"]),
};
const SSH_ARG_OPTS = new Set(["-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q", "-R", "-S", "-W", "-w"]);

export const basename = (p: string) => p.slice(p.lastIndexOf("/") + 1);

/**
 * Every program invocation in `command`, including those inside substitutions, `sh -c`, `eval`,
 * `ssh host cmd` and `xargs cmd`. Wrappers (sudo, env, nohup, ...) are peeled off.
 */
export function invocations(command: string): Invocation[] {
  const out: Invocation[] = [];
  const visit = (script: ShellScript, depth: number) => {
    for (const pipeline of script.pipelines) {
      const programs: (Invocation | undefined)[] = [];
      for (const c of pipeline) {
        for (const s of c.substitutions) visit(s, depth + 1);
        programs.push(unwrap(c.words, c.redirects, depth, visit));
      }
      programs.forEach((inv, k) => {
        if (!inv) return;
        inv.pipedInto = programs.slice(k + 1).flatMap((p) => (p ? [p.program] : []));
        out.push(inv);
      });
    }
  };
  visit(parseShell(command), 0);
  return out;
}

function unwrap(words0: string[], redirects: SimpleCommand["redirects"], depth: number, visit: (s: ShellScript, d: number) => void): Invocation | undefined {
  let words = words0.slice();
  for (let guard = 0; guard < 32; guard++) {
    while (words.length && (KEYWORDS.has(words[0]!) || /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(words[0]!))) words.shift();
    if (words.length === 0) return redirects.length ? { program: "", args: [], redirects, pipedInto: [] } : undefined;
    const prog = basename(words[0]!);
    // `command -v rm` asks where rm is; it runs nothing.
    if (prog === "command" && words.some((w) => w === "-v" || w === "-V")) return { program: prog, args: words.slice(1), redirects, pipedInto: [] };
    const opts = WRAPPER_ARG_OPTS[prog];
    if (opts) {
      let k = 1;
      while (k < words.length) {
        const w = words[k]!;
        if (w === "--") { k++; break; }
        if (prog === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) { k++; continue; }
        if (!w.startsWith("-") || w === "-") break;
        k += opts.has(w) ? 2 : 1;
      }
      if (prog === "timeout" && k < words.length) k++; // the duration
      if (prog === "nice" && /^-\d+$/.test(words[1] ?? "")) k = Math.max(k, 2);
      words = words.slice(k);
      if (prog === "xargs" && words.length === 0) words = ["echo"];
      continue;
    }
    if ((SHELLS.has(prog) || prog === "su") && words.includes("-c")) {
      const script = words[words.indexOf("-c") + 1];
      if (script !== undefined) visit(depth < MAX_SHELL_DEPTH ? parseShell(script, depth + 1) : OPAQUE_SCRIPT, depth + 1);
      return { program: prog, args: words.slice(1), redirects, pipedInto: [] };
    }
    if (prog === "eval") {
      visit(depth < MAX_SHELL_DEPTH ? parseShell(words.slice(1).join(" "), depth + 1) : OPAQUE_SCRIPT, depth + 1);
      return { program: prog, args: words.slice(1), redirects, pipedInto: [] };
    }
    if (prog === "ssh") {
      let k = 1;
      while (k < words.length && words[k]!.startsWith("-")) k += SSH_ARG_OPTS.has(words[k]!) ? 2 : 1;
      const remote = words.slice(k + 1);
      if (remote.length) visit(depth < MAX_SHELL_DEPTH ? parseShell(remote.join(" "), depth + 1) : OPAQUE_SCRIPT, depth + 1);
      return { program: prog, args: words.slice(1), redirects, pipedInto: [] };
    }
    return { program: prog, args: words.slice(1), redirects, pipedInto: [] };
  }
  return { program: "$(...)", args: [], redirects, pipedInto: [] };
}

/** Splits arguments into option letters/long options and operands (after `--`, all are operands). */
function splitArgs(args: string[]): { short: Set<string>; long: Set<string>; operands: string[] } {
  const short = new Set<string>();
  const long = new Set<string>();
  const operands: string[] = [];
  let endOpts = false;
  for (const a of args) {
    if (!endOpts && a === "--") { endOpts = true; continue; }
    if (!endOpts && a.startsWith("--")) long.add(a.split("=")[0]!);
    else if (!endOpts && a.startsWith("-") && a.length > 1) for (const ch of a.slice(1)) short.add(ch);
    else operands.push(a);
  }
  return { short, long, operands };
}

// ───────────────────────────── shell: paths ─────────────────────────────

/** Lexically normalizes a path (`/tmp/../etc/` → `/etc`), resolving `~`/$HOME and relative paths when it can. */
export function normalizePath(p: string, ctx: { cwd?: string; homeDir?: string } = {}): string {
  let s = p;
  const home = ctx.homeDir ?? "~";
  s = s.replace(/^(?:~|\$HOME|\$\{HOME\})(?=\/|$)/, home);
  if (!s.startsWith("/") && !s.startsWith("~") && ctx.cwd) s = `${ctx.cwd}/${s}`;
  const abs = s.startsWith("/");
  const parts: string[] = [];
  for (const seg of s.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") { if (parts.length && parts[parts.length - 1] !== "..") parts.pop(); else if (!abs) parts.push(".."); continue; }
    parts.push(seg);
  }
  const out = (abs ? "/" : "") + parts.join("/");
  return out === "" ? (abs ? "/" : ".") : out;
}

/** Top-level directories whose loss breaks the system; anything below the first group too. */
const SYSTEM_TREES = ["/etc", "/boot", "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/dev", "/sys", "/proc", "/System", "/Library", "/private/etc"];
const SYSTEM_DIRS = ["/", "/home", "/root", "/var", "/opt", "/srv", "/mnt", "/media", "/Users", "/Applications", "/snap", "/run"];

/**
 * A path that is the system, or holds it: `/`, `/*`, a top-level system directory or anything under
 * /etc, /usr, /bin, /boot, /dev..., the home directory itself, or a home directory under /home.
 */
export function isSystemPath(raw: string, ctx: { cwd?: string; homeDir?: string } = {}): boolean {
  const p = normalizePath(raw, ctx);
  const stripped = p.replace(/\/\*+$/, "") || "/"; // "/*" and "/etc/*" count as the directory
  if (stripped === "~" || (ctx.homeDir && stripped === normalizePath(ctx.homeDir))) return true;
  if (stripped.startsWith("~")) return false;
  if (SYSTEM_DIRS.includes(stripped)) return true;
  if (SYSTEM_TREES.some((t) => stripped === t || stripped.startsWith(t + "/"))) return true;
  if (/^\/(home|Users)\/[^/]+$/.test(stripped)) return true; // someone's whole home
  if (/^\/var\/(lib|log|spool|mail|db|backups)(\/|$)/.test(stripped)) return true;
  return /^\/\*/.test(p); // globs at the root: /*, /*.conf
}

const BLOCK_DEVICE = /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|md\d|dm-\d|loop\d|mapper\/|root)/;

// ───────────────────────────── shell: predicates ─────────────────────────────

export function shellCommandOf(call: ToolCall): string | undefined {
  for (const k of ["command", "cmd", "script", "input", "code"]) {
    const v = call.args[k];
    if (typeof v === "string") return v;
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v.map((x) => (/[\s'"\\$`;&|<>]/.test(x) ? `'${x.replace(/'/g, "'\\''")}'` : x)).join(" ");
  }
  return undefined;
}

const DELETERS = new Set(["rm", "rmdir", "unlink", "shred", "srm", "wipe", "trash", "trash-put", "gio"]);

/** What a command deletes or overwrites (its target paths), or null when it deletes nothing. */
export function deletionTargets(inv: Invocation): string[] | null {
  const { program, args } = inv;
  const a = splitArgs(args);
  switch (program) {
    case "rm": case "rmdir": case "unlink": case "shred": case "srm": case "wipe": case "trash": case "trash-put":
      return a.operands.length ? a.operands : ["$(xargs)"];
    case "gio": return args[0] === "remove" || args[0] === "trash" ? a.operands.slice(1) : null;
    case "find": {
      if (args.includes("-delete") || execsDeleter(args)) {
        const roots = [];
        for (const w of args) { if (w.startsWith("-") || w === "(" || w === "!") break; roots.push(w); }
        return roots.length ? roots : ["."];
      }
      return null;
    }
    case "mv": // moving onto /dev/null destroys the source
      return a.operands.length >= 2 && a.operands[a.operands.length - 1] === "/dev/null" ? a.operands.slice(0, -1) : null;
    case "truncate": return a.operands;
    case "git":
      if (args[0] === "clean" && args.slice(1).some((w) => /^-[a-zA-Z]*f/.test(w) || w === "--force")) return ["."];
      return null;
  }
  return null;
}

function execsDeleter(args: string[]): boolean {
  for (let k = 0; k < args.length; k++) {
    if ((args[k] === "-exec" || args[k] === "-execdir" || args[k] === "-ok") && DELETERS.has(basename(args[k + 1] ?? ""))) return true;
  }
  return false;
}

const MKFS = /^(mkfs(\..+)?|mke2fs|mkswap|newfs(_.+)?|format)$/;
const PARTITIONERS = new Set(["fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted", "wipefs", "blkdiscard"]);

/**
 * Destructive: irreversible loss beyond a single named file. rm/rmdir/shred forced (-f) or recursive
 * (-r), or on a glob; find -delete / -exec rm; making a file system; dd or a redirection onto a block
 * device; partition tools (unless only listing); git clean -f, git reset --hard; crontab -r.
 */
export function isDestructive(inv: Invocation): boolean {
  const { program, args, redirects } = inv;
  const a = splitArgs(args);
  if (redirects.some((r) => r.op.includes(">") && BLOCK_DEVICE.test(r.target))) return true;
  switch (program) {
    case "rm": case "srm": case "wipe":
      return a.short.has("r") || a.short.has("R") || a.short.has("f") || a.long.has("--recursive") || a.long.has("--force")
        || a.long.has("--no-preserve-root") || a.operands.some((o) => /[*?]/.test(o)) || a.operands.length === 0;
    case "rmdir": return a.short.has("p") || a.long.has("--parents") || a.operands.some((o) => /[*?]/.test(o));
    case "shred": return true;
    case "find": return deletionTargets(inv) !== null;
    case "dd": return args.some((w) => /^of=/.test(w) && BLOCK_DEVICE.test(w.slice(3)));
    case "truncate": return a.operands.length > 0 && args.some((w, k) => (w === "-s" && /^0+$/.test(args[k + 1] ?? "")) || /^(-s|--size=)0+$/.test(w));
    case "git":
      return (args[0] === "clean" && deletionTargets(inv) !== null) || (args[0] === "reset" && args.includes("--hard"));
    case "crontab": return a.short.has("r");
  }
  if (MKFS.test(program)) return true;
  if (PARTITIONERS.has(program)) {
    if (program === "parted") return !args.some((w) => w === "print" || w === "-l" || w === "--list");
    return !(a.short.has("l") || a.long.has("--list") || (program === "sfdisk" && (a.short.has("d") || a.long.has("--dump"))));
  }
  return false;
}

/** The paths a command acts on, for the system-location test. */
function targetPaths(inv: Invocation): string[] {
  const a = splitArgs(inv.args);
  const out = [...(deletionTargets(inv) ?? [])];
  if (inv.program === "dd") out.push(...inv.args.filter((w) => w.startsWith("of=")).map((w) => w.slice(3)));
  if (MKFS.test(inv.program) || PARTITIONERS.has(inv.program)) out.push(...a.operands.filter((o) => o.startsWith("/")));
  if (inv.program === "chmod") out.push(...chmodParts(inv.args).files);
  if (inv.program === "chown" || inv.program === "chgrp" || inv.program === "setfacl") out.push(...a.operands.slice(1));
  out.push(...inv.redirects.filter((r) => r.op.includes(">") && !r.op.endsWith("&")).map((r) => r.target));
  return out;
}

/** A command acting on `/`, a system directory, a whole home directory, or a block device. */
export function targetsSystemLocation(inv: Invocation, ctx: AgentContext = {}): boolean {
  if (inv.program === "rm" && inv.args.includes("--no-preserve-root")) return true;
  return targetPaths(inv).some((p) => p.startsWith("/dev/") ? BLOCK_DEVICE.test(p) || p === "/dev" : isSystemPath(p, ctx));
}

/** Granting permission (seed 003 Table 1): world-writable or setuid/setgid modes, ownership changes, ACLs, admin groups, sudoers. */
export function isGrantingPermission(inv: Invocation): boolean {
  const { program, args } = inv;
  if (inv.redirects.some((r) => r.op.includes(">") && /^\/etc\/(sudoers|passwd|shadow|group)/.test(normalizePath(r.target)))) return true;
  switch (program) {
    case "chown": case "chgrp": case "lchown": return true;
    case "setfacl": return args.some((w) => /^(-[a-zA-Z]*[mM]|--modify(-file)?|--set(-file)?)/.test(w));
    case "visudo": return true;
    case "usermod": return args.some((w) => /^-[a-zA-Z]*G/.test(w) || w === "--groups") && args.some((w) => ADMIN_GROUPS.test(w));
    case "gpasswd": return args.some((w) => w === "-a" || w === "-A" || w === "-M") && args.some((w) => ADMIN_GROUPS.test(w));
    case "adduser": case "addgroup": return args.filter((w) => !w.startsWith("-")).length >= 2 && ADMIN_GROUPS.test(args[args.length - 1]!);
    case "tee": return splitArgs(args).operands.some((o) => /^\/etc\/(sudoers|passwd|shadow|group)/.test(normalizePath(o)));
    case "chmod": {
      const { mode } = chmodParts(args);
      return mode !== undefined && modeGrants(mode);
    }
  }
  return false;
}

/** chmod's mode and files: options are -R -f -v -c and long ones; `-w` is a mode, not an option. */
function chmodParts(args: string[]): { mode?: string; files: string[] } {
  const rest = args.filter((w) => !/^-[RfvchHLP]+$/.test(w) && !w.startsWith("--"));
  return { mode: rest[0], files: rest.slice(1) };
}

const ADMIN_GROUPS = /^(.*,)?(sudo|wheel|admin|root|adm|docker|lxd|disk|shadow)(,.*)?$/;

/** A chmod mode that lets others write, or sets setuid/setgid. 755, 644, u+x, +x do not. */
export function modeGrants(mode: string): boolean {
  if (/^[0-7]{1,4}$/.test(mode)) {
    const m = parseInt(mode, 8);
    return (m & 0o002) !== 0 || (m & 0o6000) !== 0;
  }
  return mode.split(",").some((clause) => {
    const m = /^([ugoa]*)([-+=])(.*)$/.exec(clause);
    if (!m) return false;
    const [, who, op, perms] = m;
    if (op === "-") return false;
    const others = who === "" || who!.includes("o") || who!.includes("a");
    return (others && /w/.test(perms!)) || /s/.test(perms!);
  });
}

/** Stopping a process (seed 003 Table 1): kill (other than the probe signal 0), pkill, systemctl stop, shutdown... */
export function isStoppingProcess(inv: Invocation): boolean {
  const { program, args } = inv;
  switch (program) {
    case "kill": return !args.includes("-0") && !args.includes("-l") && !args.includes("-L") && args.length > 0;
    case "pkill": case "killall": case "xkill": case "skill": case "shutdown": case "reboot": case "halt": case "poweroff": return true;
    case "systemctl": return args.some((w) => ["stop", "kill", "disable", "mask", "restart", "isolate", "poweroff", "reboot", "halt", "suspend"].includes(w));
    case "service": return args.some((w) => w === "stop" || w === "restart");
    case "init": case "telinit": return args.some((w) => w === "0" || w === "6" || w === "1");
    case "launchctl": return args.some((w) => ["stop", "unload", "remove", "kill", "bootout"].includes(w));
    case "docker": case "podman": return args.some((w) => ["stop", "kill", "rm"].includes(w));
  }
  return false;
}

const DOWNLOADERS = new Set(["curl", "wget", "fetch", "aria2c", "http", "https", "iwr", "invoke-webrequest"]);
const INTERPRETERS = /^(sh|bash|zsh|dash|ksh|ash|fish|python[0-9.]*|perl|ruby|node|php|pwsh|powershell|source|\.|eval)$/;

/** Running code fetched from the network: `curl ... | sh`, `bash <(curl ...)`, `eval "$(wget -O- ...)"`. */
export function isExecutingRemoteScript(command: string): boolean {
  const invs = invocations(command);
  if (invs.some((inv) => DOWNLOADERS.has(inv.program) && inv.pipedInto.some((p) => INTERPRETERS.test(p)))) return true;
  // An interpreter whose input or argument is produced by a download.
  const check = (script: ShellScript): boolean => script.pipelines.some((pl) => pl.some((c) => {
    const prog = unwrap(c.words, c.redirects, MAX_SHELL_DEPTH, () => {})?.program ?? "";
    const downloads = (s: ShellScript): boolean => s.pipelines.some((p) => p.some((cc) => DOWNLOADERS.has(basename(cc.words[0] ?? "")) || cc.substitutions.some(downloads)));
    return (INTERPRETERS.test(prog) && c.substitutions.some(downloads)) || c.substitutions.some(check);
  }));
  return check(parseShell(command));
}

function shellPredicate(test: (inv: Invocation, ctx: AgentContext) => boolean): Predicate<AgentContext> {
  return ({ call, ctx }: RuleState<AgentContext>) => {
    const cmd = shellCommandOf(call);
    return cmd !== undefined && invocations(cmd).some((inv) => test(inv, ctx ?? {}));
  };
}

/** A deletion whose target is a system location, one of ctx.importantPaths (or below), or important by name. */
export function deletesImportantFile(inv: Invocation, ctx: AgentContext = {}): boolean {
  const targets = deletionTargets(inv) ?? (inv.redirects.some((r) => r.op === ">" || r.op === ">|") && inv.program === "" ? inv.redirects.map((r) => r.target) : null);
  if (!targets) return false;
  const important = (ctx.importantPaths ?? []).map((p) => normalizePath(p, ctx));
  return targets.some((t) => {
    if (t === "$(xargs)" || /^\$/.test(t)) return true; // unknown at this point: assume the worst
    const p = normalizePath(t, ctx);
    if (isSystemPath(t, ctx)) return true;
    if (important.some((i) => p === i || p.startsWith(i.endsWith("/") ? i : i + "/"))) return true;
    return IMPORTANT_NAME.test(basename(p.replace(/\/+$/, ""))) || /(^|\/)\.(git|ssh|gnupg)(\/|$)/.test(p);
  });
}

/** Files whose loss is hard to undo: VCS metadata, credentials, databases, backups. */
const IMPORTANT_NAME = /^(\.git|\.ssh|\.gnupg|\.env(\..+)?|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|authorized_keys|known_hosts|.*\.(pem|key|p12|pfx|kdbx|db|sqlite3?|bak|backup|dump)|wallet\.dat)$/i;

export const shellPredicates: Record<string, Predicate<AgentContext>> = {
  is_destructive_command: shellPredicate((inv) => isDestructive(inv)),
  targets_system_location: shellPredicate((inv, ctx) => targetsSystemLocation(inv, ctx)),
  is_granting_permission: shellPredicate((inv) => isGrantingPermission(inv)),
  is_stopping_process: shellPredicate((inv) => isStoppingProcess(inv)),
  is_deleting_files: shellPredicate((inv) => deletionTargets(inv) !== null),
  is_delete_important_file: shellPredicate((inv, ctx) => deletesImportantFile(inv, ctx)),
  is_executing_remote_script: ({ call }) => { const c = shellCommandOf(call); return c !== undefined && isExecutingRemoteScript(c); },
};
// The names of seed 003 Table 1.
shellPredicates.is_destructive = shellPredicates.is_destructive_command!;

// ───────────────────────────── email ─────────────────────────────

export interface Receiver {
  /** The address (lower-cased), or the raw text when it is not an address. */
  address: string;
  domain: string;
  valid: boolean;
  field: "to" | "cc" | "bcc";
}

/** Receivers of an email call: `to`, `cc`, `bcc`, each a string ("A <a@x>, b@y") or an array of them. */
export function receiversOf(call: ToolCall): Receiver[] {
  const out: Receiver[] = [];
  for (const field of ["to", "cc", "bcc"] as const) {
    const v = call.args[field] ?? (field === "to" ? call.args["recipients"] ?? call.args["recipient"] : undefined);
    const items = Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
    for (const item of items) {
      const text = typeof item === "string" ? item : typeof item === "object" && item && "email" in item ? String((item as { email: unknown }).email) : String(item);
      for (const seg of splitAddressList(text)) {
        const angle = /<([^<>]*)>/.exec(seg);
        const addr = (angle ? angle[1]! : seg).trim().replace(/^mailto:/i, "").toLowerCase();
        const m = /^[^\s@"<>(),;:]+@([a-z0-9\p{L}\p{N}-]+(?:\.[a-z0-9\p{L}\p{N}-]+)*)\.?$/u.exec(addr);
        out.push({ address: addr, domain: m ? m[1]! : "", valid: !!m, field });
      }
    }
  }
  return out;
}

/** Splits "Doe, John <j@x.com>; b@y.com" at commas/semicolons outside quotes and angle brackets. */
function splitAddressList(s: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  let angle = false;
  for (const c of s) {
    if (c === '"') quoted = !quoted;
    else if (c === "<" && !quoted) angle = true;
    else if (c === ">" && !quoted) angle = false;
    if ((c === "," || c === ";") && !quoted && !angle) { if (cur.trim()) out.push(cur.trim()); cur = ""; continue; }
    cur += c;
  }
  if (cur.trim()) out.push(cur.trim());
  // "Doe, John <j@x.com>": a segment without @ followed by one with a name part belongs to it.
  return out.filter((seg, k) => seg.includes("@") || !(out[k + 1] && /</.test(out[k + 1]!)) );
}

/** The user's own domains: ctx.user.domain, the domain of ctx.user.email, and ctx.user.internalDomains. */
export function userDomains(ctx: AgentContext): string[] {
  const u = ctx.user ?? {};
  const ds = [u.domain, u.email?.split("@")[1], ...(u.internalDomains ?? [])];
  return [...new Set(ds.filter((d): d is string => !!d).map((d) => d.toLowerCase().replace(/\.$/, "")))];
}

/** Internal = the user's domain or a subdomain of it. Invalid addresses, or no known user domain, are external. */
export function isExternal(r: Receiver, domains: string[]): boolean {
  if (!r.valid) return true;
  return !domains.some((d) => r.domain === d || r.domain.endsWith("." + d));
}

export interface SensitiveFinding {
  kind: "credit_card" | "ssn" | "password" | "api_key" | "private_key";
  /** The match, masked for logs (only the last 4 characters kept). */
  masked: string;
  index: number;
}

/** Luhn checksum over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (dbl) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
    dbl = !dbl;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/** The card network of a number by issuer prefix and length, or null (a Luhn-valid number alone is 1 in 10). */
export function cardNetwork(d: string): string | null {
  const len = d.length;
  if (/^4/.test(d) && (len === 13 || len === 16 || len === 19)) return "visa";
  if (/^(5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/.test(d) && len === 16) return "mastercard";
  if (/^3[47]/.test(d) && len === 15) return "amex";
  if (/^(6011|65|64[4-9])/.test(d) && len >= 16 && len <= 19) return "discover";
  if (/^35(2[89]|[3-8]\d)/.test(d) && len >= 16 && len <= 19) return "jcb";
  if (/^3(0[0-5]|[689])/.test(d) && len >= 14 && len <= 19) return "diners";
  if (/^62/.test(d) && len >= 16 && len <= 19) return "unionpay";
  return null;
}

const mask = (s: string) => (s.length <= 4 ? "*".repeat(s.length) : "*".repeat(Math.min(12, s.length - 4)) + s.slice(-4));

/** Shannon entropy in bits per character. */
function entropy(s: string): number {
  const freq = new Map<string, number>();
  for (const c of s) freq.set(c, (freq.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of freq.values()) { const p = n / s.length; h -= p * Math.log2(p); }
  return h;
}

const API_KEY_PATTERNS: RegExp[] = [
  /\bsk-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_-]{20,}/g,   // OpenAI / Anthropic style
  /\b[spr]k_(?:live|test)_[A-Za-z0-9]{16,}/g,             // Stripe
  /\bgh[pousr]_[A-Za-z0-9]{36,}/g,                         // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{22,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,                         // AWS access key ids
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,                        // Slack
  /\bAIza[0-9A-Za-z_-]{35}/g,                               // Google API keys
  /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g, // JWTs
];
const SECRET_ASSIGNMENT = /\b(api[_ -]?key|secret(?:[_ -]?key)?|access[_ -]?token|auth[_ -]?token|bearer|client[_ -]?secret|private[_ -]?token|token)\b\s*(?:[:=]|is\b)\s*["']?([A-Za-z0-9_\-/+=.]{12,})/gi;
const PASSWORD = /\b(pass(?:word|wd|phrase|code)|pwd|pin(?: code)?)\b\s*(?:[:=]|is\b|was\b)\s*["'“]?([^\s"'”]{3,})/gi;
const NOT_A_PASSWORD = /^(incorrect|wrong|required|expired|reset|invalid|correct|changed|strong|weak|secure|case-sensitive|the|a|an|not|too|still|now|being|going|protected|missing|empty|needed|below|above|attached|same|different|updated|hidden|set|blank|saved|unchanged|long|short|easy|hard)[.,!]?$/i;

/** Scans text for card numbers, SSNs, passwords, API keys and private keys. */
export function findSensitiveInformation(text: string): SensitiveFinding[] {
  const out: SensitiveFinding[] = [];
  // Card numbers: 13–19 digits, whole or in groups separated by single spaces or dashes (one kind
  // per number). A run of groups may hold more than the card ("card 4111 1111 1111 1111 2031"), so
  // every window of consecutive groups is tried.
  for (const m of text.matchAll(/(?<![\d])\d+(?:[ -]\d+)*(?![\d])/g)) {
    const groups: { digits: string; sep: string; at: number }[] = [];
    for (const g of m[0].matchAll(/([ -]?)(\d+)/g)) groups.push({ digits: g[2]!, sep: g[1]!, at: m.index! + g.index! + g[1]!.length });
    for (let a = 0; a < groups.length; a++) {
      let digits = "";
      for (let b = a; b < groups.length && digits.length < 19; b++) {
        if (b > a + 1 && groups[b]!.sep !== groups[a + 1]!.sep) break;
        digits += groups[b]!.digits;
        if (digits.length >= 13 && digits.length <= 19 && luhnValid(digits) && cardNetwork(digits)) {
          out.push({ kind: "credit_card", masked: mask(digits), index: groups[a]!.at });
          a = b; // the next card, if any, starts after this one
          break;
        }
      }
    }
  }
  // SSNs: AAA-GG-SSSS (or spaces), area not 000/666/9xx, group not 00, serial not 0000;
  // nine bare digits only right after "SSN" / "social security".
  const ssnOk = (a: string, g: string, s: string) => a !== "000" && a !== "666" && a[0] !== "9" && g !== "00" && s !== "0000";
  for (const m of text.matchAll(/(?<![\d-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\d-])/g)) {
    if (ssnOk(m[1]!, m[3]!, m[4]!)) out.push({ kind: "ssn", masked: mask(m[0]), index: m.index! });
  }
  for (const m of text.matchAll(/\b(?:ssn|social security(?: number| no\.?)?)\s*(?:#|number|no\.?)?\s*[:=]?\s*(?:is\s+)?(\d{3})(\d{2})(\d{4})\b/gi)) {
    if (ssnOk(m[1]!, m[2]!, m[3]!)) out.push({ kind: "ssn", masked: mask(m[1]! + m[2]! + m[3]!), index: m.index! });
  }
  for (const m of text.matchAll(PASSWORD)) {
    if (!NOT_A_PASSWORD.test(m[2]!)) out.push({ kind: "password", masked: mask(m[2]!), index: m.index! });
  }
  for (const re of API_KEY_PATTERNS) for (const m of text.matchAll(re)) out.push({ kind: "api_key", masked: mask(m[0]), index: m.index! });
  for (const m of text.matchAll(SECRET_ASSIGNMENT)) {
    const v = m[2]!;
    if (/\d/.test(v) && /[A-Za-z]/.test(v) && entropy(v) >= 3) out.push({ kind: "api_key", masked: mask(v), index: m.index! });
  }
  for (const m of text.matchAll(/-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/g)) out.push({ kind: "private_key", masked: "-----BEGIN PRIVATE KEY-----", index: m.index! });
  return out.sort((a, b) => a.index - b.index);
}

/** The text of an email call that is scanned: subject and body (ToolEmu's `body`, or `content`/`text`/`message`). */
export function emailText(call: ToolCall): string {
  return ["subject", "body", "content", "text", "message", "html"]
    .map((k) => call.args[k]).filter((v): v is string => typeof v === "string").join("\n");
}

export const emailPredicates: Record<string, Predicate<AgentContext>> = {
  contains_sensitive_information: ({ call }) => findSensitiveInformation(emailText(call)).length > 0,
  contains_credentials: ({ call }) => findSensitiveInformation(emailText(call)).some((f) => f.kind === "password" || f.kind === "api_key" || f.kind === "private_key"),
  contains_financial_or_identity_data: ({ call }) => findSensitiveInformation(emailText(call)).some((f) => f.kind === "credit_card" || f.kind === "ssn"),
  has_external_receiver: ({ call, ctx }) => { const ds = userDomains(ctx ?? {}); return receiversOf(call).some((r) => isExternal(r, ds)); },
  /** Seed 003 Table 2's definition: a receiver who is not among the sender's contacts. */
  has_unknown_receiver: ({ call, ctx }) => {
    const known = new Set([...(ctx?.user?.contacts ?? []), ctx?.user?.email ?? ""].map((c) => c.toLowerCase()));
    return receiversOf(call).some((r) => !r.valid || !known.has(r.address));
  },
  has_no_receiver: ({ call }) => receiversOf(call).length === 0,
};
// The names of seed 003 Table 2.
emailPredicates.contain_sensitive_content = emailPredicates.contains_sensitive_information!;
emailPredicates.contain_privacy_infor = emailPredicates.contains_financial_or_identity_data!;

/** Every predicate of this file, for RuleEnforcer's `predicates` option. */
export const defaultPredicates: Record<string, Predicate<AgentContext>> = { ...shellPredicates, ...emailPredicates };
