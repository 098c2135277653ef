import Link from "next/link";

export default function NotFound() {
  return (
    <div className="page page-narrow">
      <div className="empty">
        <p className="empty-title">Not found</p>
        <div className="empty-body">
          <p>There is nothing here — it may have been removed.</p>
          <p>
            <Link href="/teams" className="button">
              Go to Teams
            </Link>
          </p>
        </div>
      </div>
    </div>
  );
}
