// The broker's HTTP API, with the session's token in the Authorization header.
// Every failure becomes an ApiError (status 0: the broker did not answer), so a
// page can say "unavailable" instead of showing an empty table.

const TOKEN_KEY = "pgqueue.token";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
  get unauthorized() {
    return this.status === 401;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(extra = {}) {
  const headers = { ...extra };
  const t = token();
  if (t) headers.authorization = `Bearer ${t}`;
  return headers;
}

const listeners = new Set();
/** Called with every ApiError 401 (the login form opens). */
export function onUnauthorized(fn) {
  listeners.add(fn);
}

export async function request(method, path, body, { signal } = {}) {
  const init = { method, headers: authHeaders(), signal, cache: "no-store" };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, "the broker did not answer");
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch {
    answer = null;
  }
  if (!response.ok || (answer && answer.ok === false)) {
    const message = (answer && answer.error) || `HTTP ${response.status}`;
    const error = new ApiError(response.ok ? 422 : response.status, message);
    if (error.unauthorized) listeners.forEach((fn) => fn(error));
    throw error;
  }
  if (answer === null) throw new ApiError(response.status, "the answer is not JSON");
  return answer;
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body = {}) => request("POST", path, body);
export const put = (path, body = {}) => request("PUT", path, body);
export const del = (path) => request("DELETE", path);

export const q = encodeURIComponent;

/** Query string of the defined values of ``params``. */
export function qs(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return pairs.length ? "?" + new URLSearchParams(pairs).toString() : "";
}
