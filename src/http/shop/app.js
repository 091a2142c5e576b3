// The waiting page's script: reads the sale, asks who the buyer is (BUYER_AUTH: a user id, a token,
// or nothing behind a trusted proxy), then orders through @flashsale/client and shows the countdown to
// the opening, the place in line, and the order or the end. Plain browser JavaScript, no build step.
import { ApiError, FlashsaleClient } from './client.js';

const $ = (id) => document.getElementById(id);
const productId = decodeURIComponent(location.pathname.split('/').filter(Boolean).pop() ?? '');
const { buyerAuth, buyerPays } = document.documentElement.dataset;
/** Screen readers hear the place in line at most this often (the figures change every answer). */
const ANNOUNCE_EVERY_MS = 10_000;
const PANELS = ['countdown', 'waiting', 'ordered', 'over'];

const state = { countdown: undefined, lastAnnounced: 0, controller: undefined };

const fmt = (n) => Number(n).toLocaleString('en-US');

function duration(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

function show(panel) {
  for (const id of PANELS) $(id).hidden = id !== panel;
  if (panel !== 'countdown') stopCountdown();
}

function announce(text) {
  $('announce').textContent = text;
  state.lastAnnounced = Date.now();
}

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = message === '';
}

function stock(available) {
  $('stock').textContent = available > 0 ? `${fmt(available)} units left` : 'Sold out';
}

/** The stock line as the service has it now (after an ending, the figure the last answer gave is stale). */
async function refreshStock() {
  const product = await new FlashsaleClient().product(productId).catch(() => undefined);
  if (product) stock(product.available);
}

function stopCountdown() {
  clearInterval(state.countdown);
  state.countdown = undefined;
}

function startCountdown(startsAt) {
  show('countdown');
  const tick = () => {
    const left = startsAt.getTime() - Date.now();
    $('opens-in').textContent = left > 0 ? duration(left) : 'now';
    $('opens-in').dateTime = startsAt.toISOString();
  };
  tick();
  if (state.countdown === undefined) {
    announce(`The sale opens in ${duration(startsAt.getTime() - Date.now())}. Your order goes in then.`);
    state.countdown = setInterval(tick, 1000);
  }
}

function queued({ position, etaMs, available }) {
  const first = $('waiting').hidden;
  show('waiting');
  $('position').textContent = fmt(position);
  $('eta').textContent = duration(etaMs);
  $('left').textContent = fmt(available);
  stock(available);
  if (first || Date.now() - state.lastAnnounced >= ANNOUNCE_EVERY_MS)
    announce(`${fmt(position)} buyers ahead of you, about ${duration(etaMs)}. ${fmt(available)} units left.`);
}

function onProgress(p) {
  if (p.phase === 'waiting_for_start') startCountdown(p.startsAt);
  else if (p.phase === 'queued') queued(p);
}

function over(title, detail) {
  show('over');
  $('over-title').textContent = title;
  $('over-detail').textContent = detail;
  announce(`${title}. ${detail}`);
  $('over').focus();
  void refreshStock();
}

async function ordered(client, order) {
  show('ordered');
  $('order-id').textContent = order.orderId;
  $('order-quantity').textContent = `${order.quantity} ${order.quantity === 1 ? 'unit' : 'units'}`;
  $('order-product').textContent = order.productId;
  announce(`You got it: order ${order.orderId}.`);
  $('ordered').focus();
  void refreshStock();
  const view = await client.order(order.orderId).catch(() => undefined);
  if (view?.payBy !== undefined) {
    const payBy = new Date(view.payBy);
    $('pay-by-time').textContent = payBy.toLocaleString();
    $('pay-by-time').dateTime = payBy.toISOString();
    $('pay-by').hidden = false;
    $('pay').hidden = buyerPays !== 'true';
  }
  $('pay').onclick = async () => {
    try {
      await client.pay(order.orderId);
      $('pay').hidden = true;
      $('paid').hidden = false;
      announce('Paid. Thank you.');
    } catch (err) {
      showError(err instanceof ApiError ? err.body.message || err.error : String(err));
    }
  };
}

const ENDINGS = {
  sold_out: () => ['Sold out', 'Every unit has been sold.'],
  insufficient_stock: (r) => ['Not enough left', `Only ${fmt(r.available)} left: try a smaller quantity.`],
  limit_exceeded: (r) => ['Limit reached', `At most ${fmt(r.limit)} per buyer.`],
  sale_ended: (r) => ['The sale has ended', `It closed at ${r.endsAt.toLocaleString()}.`],
  unknown_product: () => ['No such sale', `There is no sale of "${productId}".`],
};

/** The buyer's client: the identity this deployment asks for, this page's origin. */
function clientFor(form) {
  if (buyerAuth === 'jwt') return new FlashsaleClient({ token: form.token.value.trim() });
  if (buyerAuth === 'none') return new FlashsaleClient({ userId: form.user.value.trim() });
  return new FlashsaleClient(); // header: the proxy in front says who the buyer is
}

/** One Idempotency-Key per buyer and product in this tab: a reload does not order twice. */
function keyFor(form) {
  const name = `flashsale.key.${productId}.${form.user?.value ?? ''}`;
  const key = sessionStorage.getItem(name) ?? crypto.randomUUID();
  sessionStorage.setItem(name, key);
  return key;
}

async function join(event) {
  event.preventDefault();
  const form = event.target;
  showError('');
  const client = clientFor(form);
  state.controller = new AbortController();
  form.hidden = true;
  $('leave').hidden = false;
  try {
    const quantity = Number(form.quantity.value);
    const result = await client.placeOrder(
      { productId, quantity },
      { signal: state.controller.signal, onProgress, idempotencyKey: keyFor(form) },
    );
    $('leave').hidden = true;
    if (result.outcome === 'ordered') await ordered(client, result.order);
    else over(...ENDINGS[result.outcome](result));
  } catch (err) {
    $('leave').hidden = true;
    show(undefined);
    form.hidden = false;
    if (err?.name === 'AbortError') announce('You left the line.');
    else
      showError(err instanceof ApiError ? `${err.body.message || err.error} (${err.status})` : String(err));
  }
}

async function start() {
  $('product').textContent = productId;
  $('user-field').hidden = buyerAuth !== 'none';
  $('user').disabled = buyerAuth !== 'none';
  $('token-field').hidden = buyerAuth !== 'jwt';
  $('token').disabled = buyerAuth !== 'jwt';
  $('join').addEventListener('submit', join);
  $('leave').addEventListener('click', () => state.controller?.abort());
  try {
    const product = await new FlashsaleClient().product(productId);
    stock(product.available);
    if (product.startsAt && new Date(product.startsAt) > new Date())
      $('stock').textContent += ` · opens ${new Date(product.startsAt).toLocaleString()}`;
    $('join').hidden = false;
  } catch (err) {
    $('stock').textContent = '';
    showError(
      err instanceof ApiError && err.status === 404 ? `There is no sale of "${productId}".` : String(err),
    );
  }
}

start();
