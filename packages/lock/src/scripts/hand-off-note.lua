-- The "held by one of ours" note of the reentrant lock (included by acquire.lua and release.lua):
-- "1" when its holder took the lock directly, "<waitId>|<token>" when a release handed it to a wait.

-- The wait a note names and its token, or nil for a direct take or no note.
local function note_hand_off(note)
  if not note then
    return nil
  end
  local wait, token = string.match(note, '^(.*)|(%d+)$')
  return wait, tonumber(token)
end
