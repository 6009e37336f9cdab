import { EMPTY_CART, type Action, type Cart } from "./types.js";

/** The cart after `action`; carts are never mutated. */
export function reduce(cart: Cart, action: Action): Cart {
  switch (action.type) {
    case "add": {
      const existing = cart.lines.find((l) => l.sku === action.line.sku);
      if (existing) {
        return {
          ...cart,
          lines: cart.lines.map((l) =>
            l.sku === action.line.sku ? { ...l, quantity: l.quantity + action.quantity } : l,
          ),
        };
      }
      return { ...cart, lines: [...cart.lines, { ...action.line, quantity: action.quantity }] };
    }
    case "setQuantity":
      if (action.quantity <= 0) {
        return { ...cart, lines: cart.lines.filter((l) => l.sku !== action.sku) };
      }
      return {
        ...cart,
        lines: cart.lines.map((l) => (l.sku === action.sku ? { ...l, quantity: action.quantity } : l)),
      };
    case "remove":
      return { ...cart, lines: cart.lines.filter((l) => l.sku !== action.sku) };
    case "applyCoupon":
      return { ...cart, couponPercent: Math.min(100, Math.max(0, action.percent)) };
    case "clear":
      return EMPTY_CART;
  }
}
