/** Seconds before the next try after `failures` failed ones in a row: 2, 4, 8, 16, then every 30 (client-safe). */
export function retryDelaySeconds(failures: number): number {
  return Math.min(30, 2 ** Math.max(1, failures + 1));
}
