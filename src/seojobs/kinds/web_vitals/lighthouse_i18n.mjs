// Lighthouse's i18n, cached (the product's warm slots, lighthouse_worker.mjs, and the tests'
// tests/browser/lighthouse_pages.mjs). Every string of a report, and every audit's title at
// each run's config check, goes through formatMessage, which builds an IntlMessageFormat: it
// looks its locale up again (Intl.NumberFormat.supportedLocalesOf, slow in Node) and parses the
// message again. Both depend on their arguments alone, and nothing changes what they return:
// once per locale, once per message; the reports are the same.
//
//   await cacheMessageFormat(load)  (load: path under node_modules -> the module's namespace)
export async function cacheMessageFormat(load) {
  const {default: messageFormat} = await load('intl-messageformat/index.js');
  const Formatter = messageFormat.IntlMessageFormat || messageFormat;
  const once = (fn, key) => {
    const cache = new Map();
    return (...args) => {
      const k = key(...args);
      if (!cache.has(k)) cache.set(k, fn(...args));
      return cache.get(k);
    };
  };
  Formatter.resolveLocale = once(Formatter.resolveLocale, (locales) => JSON.stringify(locales));
  Formatter.__parse = once(Formatter.__parse, (message, options) =>
    JSON.stringify([message, {...options, locale: String(options?.locale)}]));
}
