/**
 * @fileoverview Interning by hash: ids found by a 32-bit hash in an open-addressing table (linear
 * probing, at most half full) on typed arrays, the caller confirming each candidate. The grammar
 * compilation interns by the hundred thousand — network positions (regular.ts buildNetwork),
 * subset states, items and seed lists (pda.ts grammarToPda), table rows (../tables.ts) — and a
 * Map there was most of those functions' time or garbage: keys packed into one number pass 2^31
 * and are hashed as boxed doubles, and a Map of bucket arrays leaves an array per entry for the
 * collector to copy.
 */
export class IdTable {
  private ids = new Int32Array(1024).fill(-1);
  private hashes = new Int32Array(1024);
  private size = 0;
  /** The empty slot where the last unsuccessful `find` stopped. */
  private free = -1;

  /** The id filed under `h` that `same` accepts, or -1 (then `add` may file one under `h`). */
  find(h: number, same: (id: number) => boolean): number {
    const m = this.ids.length - 1;
    let i = slotOf(h) & m;
    for (let id: number; (id = this.ids[i]!) >= 0; i = (i + 1) & m) if (this.hashes[i] === h && same(id)) return id;
    this.free = i;
    return -1;
  }

  /** Files `id` under `h`, right after a `find(h, …)` that found none. */
  add(h: number, id: number): void {
    this.ids[this.free] = id;
    this.hashes[this.free] = h;
    if (2 * ++this.size > this.ids.length) this.grow();
  }

  private grow(): void {
    const { ids, hashes } = this;
    this.ids = new Int32Array(2 * ids.length).fill(-1);
    this.hashes = new Int32Array(2 * ids.length);
    const m = this.ids.length - 1;
    for (let k = 0; k < ids.length; k++) {
      if (ids[k]! < 0) continue;
      let i = slotOf(hashes[k]!) & m;
      while (this.ids[i]! >= 0) i = (i + 1) & m;
      this.ids[i] = ids[k]!;
      this.hashes[i] = hashes[k]!;
    }
  }
}

/** The hash's bits mixed down, so that a table's low-bit mask sees all of them. */
function slotOf(h: number): number {
  const i = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return i ^ (i >>> 16);
}
