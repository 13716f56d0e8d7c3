// memhub's web page: talking to the API with the tab's key, and showing what went wrong.
// Shared by the page's modules; every value from the server is set as text, never as HTML.

export const $ = (id) => document.getElementById(id);
export const KEY_STORE = "memhub.apiKey";

export const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export class ApiError extends Error {}

export async function api(method, path, body) {
  const key = sessionStorage.getItem(KEY_STORE);
  const headers = { Accept: "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(`Cannot reach the server (${err.message}).`);
  }
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const message = data && data.error ? data.error : response.statusText;
    throw new ApiError(`${response.status}: ${message}`);
  }
  return data;
}

export function showError(err) {
  const box = $("error");
  box.textContent = err instanceof Error ? err.message : String(err);
  box.hidden = false;
}

export function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

export async function guarded(action) {
  clearError();
  try {
    await action();
  } catch (err) {
    showError(err);
    if (!(err instanceof ApiError)) console.error(err);
  }
}

// An element with attributes and text content (never HTML).
export function el(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}
