-- Headless Neovim (0.7+) drives `fusion-switch serve`: open a config with an unknown rule,
-- wait for the server's diagnostics, ask for completion, write what came back as JSON.
-- Inputs (environment): FS_PYTHON (interpreter with fusion_switch), FS_FILE (the config),
-- FS_OUT (where to write the JSON result).
local python, file, out_path = os.getenv('FS_PYTHON'), os.getenv('FS_FILE'), os.getenv('FS_OUT')
local out = { errors = {} }

local function finish()
  local f = io.open(out_path, 'w')
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd('qa!')
end

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = 'json'
  local id = vim.lsp.start_client({
    name = 'fusion-switch',
    cmd = { python, '-m', 'fusion_switch', 'serve' },
    root_dir = vim.fn.fnamemodify(file, ':h'),
  })
  vim.lsp.buf_attach_client(buf, id)

  out.diagnostics_arrived = vim.wait(20000, function()
    return #vim.diagnostic.get(buf) > 0
  end, 50)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local lsp = (d.user_data or {}).lsp or {}
    table.insert(out.diagnostics, {
      line = d.lnum, col = d.col, end_col = d.end_col, severity = d.severity,
      message = d.message, source = d.source or lsp.source, code = d.code or lsp.code,
    })
  end

  -- Completion inside the unknown rule's key (line 3, after `      "Conv`).
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = 3, character = 11 },
  }
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 10000) or {}
  out.completion_labels = {}
  for _, response in pairs(responses) do
    if response.err then table.insert(out.errors, vim.inspect(response.err)) end
    local result = response.result or {}
    for _, item in ipairs(result.items or result) do
      table.insert(out.completion_labels, item.label)
    end
  end

  vim.lsp.stop_client(id)
  vim.wait(3000, function() return vim.lsp.get_client_by_id(id) == nil end, 50)
end)
if not ok then table.insert(out.errors, tostring(err)) end
finish()
