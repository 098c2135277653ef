"use client";

import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";

/**
 * Escape closes an inline form, as it closes a dialog: the form's onKeyDown. Not while an input
 * method composes a character, nor when a control inside handled Escape itself (an open list).
 */
export function closeOnEscape(close: () => void) {
  return (event: KeyboardEvent) => {
    if (event.key !== "Escape" || event.nativeEvent.isComposing || event.defaultPrevented) return;
    event.preventDefault();
    event.stopPropagation();
    close();
  };
}

/**
 * An inline form opened by a button in place ("Edit and approve", "Deny", "Edit"): which one is
 * open, Escape (or Cancel) closes it, and focus goes back to the button that opened it, which
 * only exists again once the form is gone. A form closed by its own success keeps focus where
 * the page puts it (`done`): its opener may have gone with the decision. `onCancel` runs on
 * Escape and Cancel alike (to drop an error or a draft that belonged to the form).
 */
export function useInlineForm<Name extends string>(onCancel?: () => void) {
  const [open, setOpen] = useState<Name | null>(null);
  const openers = useRef(new Map<Name, HTMLElement>());
  const returnTo = useRef<Name | null>(null);
  const openRef = useRef(open);
  openRef.current = open;
  const onCancelRef = useRef(onCancel);
  onCancelRef.current = onCancel;

  useEffect(() => {
    if (open !== null || returnTo.current === null) return;
    openers.current.get(returnTo.current)?.focus();
    returnTo.current = null;
  }, [open]);

  const cancel = useCallback(() => {
    returnTo.current = openRef.current;
    setOpen(null);
    onCancelRef.current?.();
  }, []);
  const done = useCallback(() => setOpen(null), []);
  /** The button's ref: where focus returns when its form is cancelled. */
  const opener = useCallback(
    (name: Name) => (element: HTMLElement | null) => {
      if (element) openers.current.set(name, element);
      else openers.current.delete(name);
    },
    [],
  );
  /** On the form: Escape cancels it. */
  const onKeyDown = useMemo(() => closeOnEscape(cancel), [cancel]);
  return { open, show: setOpen, cancel, done, opener, onKeyDown };
}
