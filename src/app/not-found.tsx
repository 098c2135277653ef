import Link from "next/link";

export default function NotFound() {
  return (
    <div className="page">
      <div className="empty">
        <h1 className="empty-title">Not found</h1>
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
