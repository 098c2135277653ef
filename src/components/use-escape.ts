"use client";

import { useEffect, useRef, type KeyboardEvent } from "react";

/**
 * Escape closes an inline form, as it closes a dialog: the form's onKeyDown. A control that
 * handles Escape itself (an open list) marks the event handled and keeps the form open.
 */
export function closeOnEscape(close: () => void) {
  return (event: KeyboardEvent<HTMLElement>) => {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    event.preventDefault();
    close();
  };
}

/**
 * The button that opened an inline form gets the focus back when the form closes (Escape,
 * Cancel or Save), so a keyboard user goes on from where they were rather than from the top.
 */
export function useReturnFocus<T extends HTMLElement = HTMLButtonElement>(open: boolean) {
  const opener = useRef<T>(null);
  const wasOpen = useRef(open);
  useEffect(() => {
    if (wasOpen.current && !open) opener.current?.focus();
    wasOpen.current = open;
  }, [open]);
  return opener;
}
