/**
 * What a page shows while it loads: the loading.tsx of each part of the app (see app/found.ts
 * for why there is no single one at the root).
 */
export function PageSkeleton() {
  return (
    <div className="page" aria-busy="true">
      <p className="visually-hidden" role="status">
        Loading…
      </p>
      <div className="skeleton skeleton-title" />
      <div className="skeleton skeleton-line" />
      <div className="skeleton skeleton-card" />
      <div className="skeleton skeleton-card" />
    </div>
  );
}
