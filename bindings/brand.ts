/**
 * Class identity that holds across copies of this package. An application
 * that loads both builds (the ES one with `import`, the CommonJS one with
 * `require()`; dist/cjs/) has two copies of every module, so two
 * PgoutputError classes, and an error thrown by one copy must still pass the
 * other's `instanceof` and type guard. A registered symbol (`Symbol.for`) is
 * the same in every copy: the class marks its prototype with it and answers
 * `instanceof` by the mark. A subclass keeps the ordinary test.
 */
export function brandClass(cls: abstract new (...args: never[]) => object, name: string): void {
  const mark = Symbol.for(`pgoutput-wasm.${name}`);
  Object.defineProperty(cls.prototype, mark, { value: true });
  const ordinary = Function.prototype[Symbol.hasInstance];
  Object.defineProperty(cls, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      if (this !== cls) return ordinary.call(this, value);
      return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[mark] === true;
    },
  });
}
