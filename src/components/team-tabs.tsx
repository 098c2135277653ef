"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

/** The team page's sections, each at its own address (`""` is the Overview at /teams/:id). */
const TEAM_SECTIONS = [
  { path: "", label: "Overview" },
  { path: "agents", label: "Agents" },
  { path: "tools", label: "Tools" },
  { path: "notifications", label: "Notifications" },
  { path: "settings", label: "Settings" },
] as const;

/** Links, not ARIA tabs: each section is a page of its own, so the current one is `aria-current="page"`. */
export function TeamTabs({ teamId }: { teamId: string }) {
  const pathname = usePathname();
  return (
    <nav aria-label="Team sections" className="team-tabs">
      <ul>
        {TEAM_SECTIONS.map(({ path, label }) => {
          const href = path ? `/teams/${teamId}/${path}` : `/teams/${teamId}`;
          const current = pathname === href;
          return (
            <li key={label}>
              <Link
                href={href}
                className={current ? "team-tab current" : "team-tab"}
                aria-current={current ? "page" : undefined}
              >
                {label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
