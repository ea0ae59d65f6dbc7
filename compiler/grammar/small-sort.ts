/**
 * @fileoverview Ascending sorts of the short number lists the grammar compilation sorts by the
 * hundred thousand (an item's closure, a subset state's kernel, a successor's seeds). V8's
 * Array.prototype.sort allocates its work state on every call and pays a comparator call per
 * comparison: ~90 ns for two numbers, where an insertion sort in place takes ~10 and leaves no
 * garbage. On the MaskBench schemas whose compile is slowest, sorting was a tenth of what the
 * compile allocated. Longer lists go to the built-in sort; both orders are the same.
 */

/** Longest list sorted by insertion. */
const SMALL = 24;

/** Sorts `a` ascending in place and returns it. */
export function sortNumbers(a: number[]): number[] {
  const n = a.length;
  if (n > SMALL) return a.sort(ascending);
  for (let i = 1; i < n; i++) {
    const x = a[i]!;
    let j = i - 1;
    for (; j >= 0 && a[j]! > x; j--) a[j + 1] = a[j]!;
    a[j + 1] = x;
  }
  return a;
}

/** Sorts `a` in place by each entry's first number, ascending, and returns it (stable, as Array.prototype.sort is). */
export function sortByFirst<T extends readonly [number, ...unknown[]]>(a: T[]): T[] {
  const n = a.length;
  if (n > SMALL) return a.sort(byFirst);
  for (let i = 1; i < n; i++) {
    const x = a[i]!;
    let j = i - 1;
    for (; j >= 0 && a[j]![0] > x[0]; j--) a[j + 1] = a[j]!;
    a[j + 1] = x;
  }
  return a;
}

const ascending = (a: number, b: number): number => a - b;
const byFirst = (a: readonly [number, ...unknown[]], b: readonly [number, ...unknown[]]): number => a[0] - b[0];
