/**
 * Wraps an async action so that it never runs twice at once: a call while it runs asks for
 * one more run after it (however many calls came meanwhile), and that run starts only when
 * the current one has ended. A reload of "the latest state" needs this: two overlapping reads
 * may finish in either order, and showing the older one last hides what only the newer saw.
 */
export function oneAtATime(action: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  let again = false;
  const run = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        await action();
      } finally {
        running = null;
        if (again) {
          again = false;
          void run();
        }
      }
    })();
    return running;
  };
  return run;
}
