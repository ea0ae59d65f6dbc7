// The worker's entry: worker threads do not inherit the parent's `--import tsx` loader, so register
// it here, then load the TypeScript worker (worker.ts).
import { register } from "tsx/esm/api";
register();
await import("./worker.ts");
