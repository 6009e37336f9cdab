export interface Line {
  sku: string;
  name: string;
  unitCents: number;
  quantity: number;
}

export interface Cart {
  lines: Line[];
  couponPercent: number;
}

export type Action =
  | { type: "add"; line: Omit<Line, "quantity">; quantity: number }
  | { type: "setQuantity"; sku: string; quantity: number }
  | { type: "remove"; sku: string }
  | { type: "applyCoupon"; percent: number }
  | { type: "clear" };

export const EMPTY_CART: Cart = { lines: [], couponPercent: 0 };

/** The total of the cart in cents, after the coupon, rounded down. */
export function total(cart: Cart): number {
  const sum = cart.lines.reduce((acc, l) => acc + l.unitCents * l.quantity, 0);
  return Math.floor((sum * (100 - cart.couponPercent)) / 100);
}
