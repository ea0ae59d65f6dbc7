/**
 * @fileoverview Adapter for @huggingface/transformers (transformers.js): a logits processor that
 * applies the spec's mask to each row of a batch at every generation step. It is written against the
 * shape transformers.js hands a LogitsProcessor — `_call(input_ids, logits)` with `input_ids` one
 * id list per sequence (numbers or bigints) and `logits` a Tensor with `.data` (Float32Array) and
 * `.dims` [batch, vocab] (or [vocab]) — so it needs no import of the package: pass it in
 * `logits_processor: [processor]` (transformers.js accepts any object with `_call`; wrap it in its
 * `LogitsProcessorList` if your version insists on one).
 *
 * Each call first commits the ids generated since the previous call (the first call sees only the
 * prompt and commits nothing), then masks the row. When a committed token completes an env-input
 * marker the row yields: its logits are all -Infinity, the host stops that sequence (a stopping
 * criterion on `needsEnv(row)`), runs the tool, appends the tool's text and token ids to the row,
 * and calls `feedEnv(row, text, ids)` before generating again.
 */
import { applyMask, type Matcher, type Spec } from "../spec.js";

interface TensorLike { data: Float32Array | Float64Array; dims: readonly number[] }

export class SpecLogitsProcessor {
  private readonly matchers: Matcher[];
  private consumed: number[] | null = null;
  /** Rows whose matcher rejected a token (a sampler that ignored the mask); they get no more tokens. */
  readonly failed = new Set<number>();

  constructor(readonly spec: Spec, batchSize = 1) {
    this.matchers = Array.from({ length: batchSize }, () => spec.matcher());
  }

  /** The matcher of row `i` (to read its state). */
  matcher(i = 0): Matcher {
    return this.matchers[i]!;
  }

  /** Row `i` emitted an env-input marker and waits for the environment's text. */
  needsEnv(i = 0): boolean {
    return this.matchers[i]!.yielding;
  }

  /** The environment's text for row `i`; `ids` are its token ids, already appended to the row. */
  feedEnv(i: number, text: string, ids: readonly (number | bigint)[]): void {
    this.matchers[i]!.feedEnv(text);
    if (this.consumed) this.consumed[i]! += ids.length;
  }

  _call(inputIds: readonly (readonly (number | bigint)[])[], logits: TensorLike): TensorLike {
    const rows = logits.dims.length === 1 ? 1 : logits.dims[0]!;
    const vocab = logits.dims[logits.dims.length - 1]!;
    if (rows !== this.matchers.length) throw new RangeError(`SpecLogitsProcessor: batch of ${rows} rows, built for ${this.matchers.length}`);
    if (!this.consumed) this.consumed = inputIds.map((ids) => ids.length);
    for (let r = 0; r < rows; r++) {
      const ids = inputIds[r]!;
      const m = this.matchers[r]!;
      for (; this.consumed[r]! < ids.length; this.consumed[r]!++) {
        if (m.isDone || m.yielding || this.failed.has(r)) { this.failed.add(r); break; }
        if (m.commit(Number(ids[this.consumed[r]!]!)) === "rejected") this.failed.add(r);
      }
      const row = logits.data.subarray(r * vocab, (r + 1) * vocab) as Float32Array;
      if (this.failed.has(r) || m.isDone || m.yielding) row.fill(-Infinity);
      else {
        applyMask(row, m.maskView()); // read in place: no copy, and no runtime call before it is used
      }
    }
    return logits;
  }
}
