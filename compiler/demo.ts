/**
 * @fileoverview `specc demo`: placeholder until the token-level demo lands (see README).
 */
export async function runDemo(_out: string, io: { out: (s: string) => void }): Promise<number> {
  io.out("demo: not yet available");
  return 0;
}
